//! Path spelling as the reference prints it (Python's `pathlib`), so listed paths agree.

use std::path::{Component, Path, PathBuf};

/// `pathlib`'s normal form: `.` components and trailing or doubled separators vanish
/// (`./a//b/` → `a/b`); `..` is kept.
pub(crate) fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        if component != Component::CurDir {
            out.push(component.as_os_str());
        }
    }
    if out.as_os_str().is_empty() {
        out.push(".");
    }
    out
}

/// `Path.expanduser()` for `~` and `~/…` (other users' homes are left as written).
pub(crate) fn expand_user(path: &Path, home: Option<&Path>) -> PathBuf {
    let mut components = path.components();
    match (components.next(), home) {
        (Some(Component::Normal(first)), Some(home)) if first == "~" => {
            normalize(&home.join(components.as_path()))
        }
        _ => normalize(path),
    }
}

/// Something (even a dangling symlink) is at `path`.
pub(crate) fn occupied(path: &Path) -> bool {
    path.symlink_metadata().is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normal_form() {
        assert_eq!(normalize(Path::new("./a//b/")), PathBuf::from("a/b"));
        assert_eq!(
            normalize(Path::new("/x/./y/../z")),
            PathBuf::from("/x/y/../z")
        );
        assert_eq!(normalize(Path::new(".")), PathBuf::from("."));
    }

    #[test]
    fn tilde() {
        let home = Path::new("/home/u/");
        assert_eq!(
            expand_user(Path::new("~/s"), Some(home)),
            PathBuf::from("/home/u/s")
        );
        assert_eq!(
            expand_user(Path::new("~"), Some(home)),
            PathBuf::from("/home/u")
        );
        assert_eq!(
            expand_user(Path::new("~bob/s"), Some(home)),
            PathBuf::from("~bob/s")
        );
        assert_eq!(expand_user(Path::new("~/s"), None), PathBuf::from("~/s"));
    }
}
