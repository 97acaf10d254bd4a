//! Everything pt-snap keeps exactly as pt-snap-cli 0.4.1 has it, so that agents, skills and
//! scripts written for the reference keep working (docs/compatibility.md lists where we
//! deliberately differ):
//!
//! * [`ErrorCode`]: the error codes, each with its default hint and exit status ([`hint`]
//!   has the hints one code takes for different causes), and [`Failure`], the one failure
//!   type every layer reports through (a code, a message, a hint);
//! * [`envelope`]: the JSON success and error envelopes;
//! * [`python`]: Python's spellings of values (`repr`, `json.dumps` with and without
//!   `ensure_ascii`, `isoformat`, `hexdigest`);
//! * [`publish`]: temp → rename publication of files and directories, refusing or replacing
//!   what is at the target, which the reference's writers promise (§4.5, §10.1).
//!
//! Only [`publish`] touches files; the rest is pure, and the browser build uses it too.

#![forbid(unsafe_code)]

mod code;
pub mod envelope;
mod failure;
pub mod publish;
pub mod python;

pub use code::{hint, ErrorCode};
pub use failure::Failure;
