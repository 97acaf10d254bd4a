"""The wheel as a user gets it: installed offline into a fresh venv, its metadata, the
`pt-snap` it puts on the venv's PATH run from elsewhere (as pipx and uvx run it), an import,
and `pt-snap view` serving the built-in app and the file to its token only.

    PT_SNAP_WHEEL=target/wheels/dev/pt_snap-*.whl tests/python/.venv/bin/pytest tests/python/test_wheel.py

(scripts/test builds the wheel with `scripts/wheel --dev` and runs this.)
"""

import email
import json
import os
import re
import signal
import subprocess
import sys
import urllib.error
import urllib.request
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "fixtures/upstream-pkg/snapshots/snapshot_with_multi_devices.pkl"


@pytest.fixture(scope="module")
def wheel():
    given = os.environ.get("PT_SNAP_WHEEL")
    if not given:
        pytest.fail("PT_SNAP_WHEEL must name the wheel to test (scripts/wheel --dev makes one)")
    path = Path(given)
    assert path.is_file(), path
    return path


@pytest.fixture(scope="module")
def pt_snap(wheel, tmp_path_factory):
    """`pt-snap` installed from the wheel into a fresh venv, offline."""
    venv = tmp_path_factory.mktemp("venv")
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run(
        [str(venv / "bin/pip"), "install", "--no-index", "--no-deps",
         "--disable-pip-version-check", "--quiet", str(wheel)],
        check=True,
    )
    exe = venv / "bin/pt-snap"
    assert exe.is_file()
    return exe


def isolated(home):
    """An environment with no focus, config or browser of the user's."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PT_SNAP_DB_PATH", "BROWSER", "DISPLAY", "WAYLAND_DISPLAY", "VIRTUAL_ENV")}
    env["HOME"] = str(home)
    # Not the venv's bin: the script runs by its path, as pipx's link or uvx run it.
    env["PATH"] = "/usr/bin:/bin"
    return env


def test_metadata_names_the_project_license_pythons_and_script(wheel):
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        info = next(n for n in names if n.endswith(".dist-info/METADATA"))
        meta = email.message_from_bytes(z.read(info))
        tags = email.message_from_bytes(z.read(info.replace("METADATA", "WHEEL")))
        record = z.read(info.replace("METADATA", "RECORD")).decode()
    assert meta["Name"] == "pt-snap"
    assert re.fullmatch(r"\d+\.\d+\.\d+", meta["Version"])
    assert meta["License-Expression"] == "MIT"
    assert meta["Requires-Python"] == ">=3.8"
    assert "memory" in meta["Summary"]
    # One platform wheel, for any Python 3: a binary, no Python module.
    assert re.fullmatch(r"py3-none-(manylinux|musllinux|macosx|win)\S+", tags["Tag"]), tags["Tag"]
    assert tags["Root-Is-Purelib"] == "false"
    script = f"pt_snap-{meta['Version']}.data/scripts/pt-snap"
    assert script in names
    assert script in record
    assert not [n for n in names if n.endswith(".py")]


def test_the_installed_script_runs_from_anywhere(pt_snap, tmp_path):
    out = subprocess.run([str(pt_snap), "--version"], capture_output=True, text=True,
                         cwd=tmp_path, env=isolated(tmp_path), check=True)
    assert re.fullmatch(r"pt-snap \d+\.\d+\.\d+\n", out.stdout), out.stdout
    # Stripped: a binary of the wheel carries no symbol table.
    with open(pt_snap, "rb") as f:
        head = f.read(4)
    assert head == b"\x7fELF"
    sections = subprocess.run(["readelf", "-S", str(pt_snap)], capture_output=True, text=True)
    if sections.returncode == 0:
        assert ".symtab" not in sections.stdout


def test_import_works(pt_snap, tmp_path):
    out = subprocess.run(
        [str(pt_snap), "import", str(SAMPLE), "-o", str(tmp_path), "--no-focus", "--json"],
        capture_output=True, text=True, cwd=tmp_path, env=isolated(tmp_path),
    )
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["ok"] is True


def get(url):
    try:
        with urllib.request.urlopen(url, timeout=30) as r:
            return r.status, r.read(), r.headers
    except urllib.error.HTTPError as e:
        return e.code, e.read(), e.headers


def test_view_serves_the_built_in_app_and_the_file_to_its_token(pt_snap, tmp_path):
    view = subprocess.Popen(
        [str(pt_snap), "view", str(SAMPLE), "--no-open", "--port", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        cwd=tmp_path, env=isolated(tmp_path),
    )
    try:
        url = None
        for line in view.stdout:
            m = re.search(r"http://127\.0\.0\.1:\d+/\?token=[0-9a-f]{48}", line)
            if m:
                url = m.group(0)
                break
        assert url, "no URL printed"
        base, token = url.split("/?token=")
        status, page, headers = get(url)
        assert status == 200
        assert b"Content-Security-Policy" in page
        assert headers["Cross-Origin-Embedder-Policy"] == "require-corp"
        # Every script and wasm file the page names is served from the binary.
        for name in re.findall(rb'(?:src|href)="\./([^"]+\.(?:js|wasm))"', page):
            status, body, _ = get(f"{base}/{name.decode()}")
            assert status == 200 and body, name
        status, listing, _ = get(f"{base}/files?token={token}")
        assert status == 200
        assert json.loads(listing)["files"][0]["path"] == SAMPLE.name
        status, body, _ = get(f"{base}/files/0?token={token}")
        assert status == 200 and body == SAMPLE.read_bytes()
        for target in ("/files/0", "/files", f"/files/0?token={'0' * 48}"):
            status, body, _ = get(base + target)
            assert status == 403, target
            assert SAMPLE.read_bytes()[:64] not in body
    finally:
        view.send_signal(signal.SIGINT)
        _, err = view.communicate(timeout=30)
    assert view.returncode == 0, err
    assert err.endswith("pt-snap view: stopped.\n"), err
