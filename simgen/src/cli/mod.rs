//! The `simgen` subcommands that have outgrown `main.rs`.
pub mod climate;
pub mod multislice;
pub mod preview;
