//! Decoder tests.
