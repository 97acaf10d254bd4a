//! Print the canonical JSON of a SnapshotDB (twin of tests/oracle/canon_db.py).
//!
//! `cargo run -p pt-snap-testkit --example canon -- DB [-o OUT]`
//! `cargo run -p pt-snap-testkit --example canon -- --sample OUT.db` writes the sample DB.

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.as_slice() {
        [flag, out] if flag == "--sample" => pt_snap_testkit::write_sample_db(out).map(|_| None),
        [db] => pt_snap_testkit::canonical_db_json(db).map(Some),
        [db, flag, out] if flag == "-o" => pt_snap_testkit::canonical_db_json(db).and_then(|s| {
            std::fs::write(out, s)
                .map_err(|e| rusqlite::Error::ToSqlConversionFailure(Box::new(e)))?;
            Ok(None)
        }),
        _ => {
            eprintln!("usage: canon DB [-o OUT] | canon --sample OUT.db");
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(Some(text)) => {
            print!("{text}");
            ExitCode::SUCCESS
        }
        Ok(None) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("canon: {e}");
            ExitCode::FAILURE
        }
    }
}
