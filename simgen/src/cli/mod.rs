//! The `simgen` subcommands that have outgrown `main.rs`.
pub mod multislice;
pub mod preview;
