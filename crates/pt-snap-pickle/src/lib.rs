//! Safe streaming pickle decoder (being written).
