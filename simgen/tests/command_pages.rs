//! Every `simgen` command's page in `docs/commands/` shows the command's
//! `--help` as the binary prints it, so no flag goes undocumented and no
//! page describes a flag that is gone (`STAGEHAND_UPDATE_DOCS=1` rewrites
//! the blocks).

use e2e::cli_docs::check_command_pages;

#[test]
fn every_command_page_shows_the_help_the_binary_prints() {
    if let Err(error) = check_command_pages(
        env!("CARGO_BIN_EXE_simgen").as_ref(),
        &[
            "simgen cosmo",
            "simgen pk",
            "simgen multislice",
            "simgen climate",
            "simgen traces",
            "simgen jets",
            "simgen massmaps",
            "simgen ppx-serve",
        ],
    ) {
        panic!("{error}");
    }
}
