//! Every `simgen` command's page in `docs/commands/` shows the command's
//! `--help` as the binary prints it, so no flag goes undocumented and no
//! page describes a flag that is gone (`STAGEHAND_UPDATE_DOCS=1` rewrites
//! the blocks).

use e2e::cli_docs::{check_help_block, command_page};

#[test]
fn every_command_page_shows_the_help_the_binary_prints() {
    let failures: Vec<String> = ["simgen cosmo", "simgen pk", "simgen multislice", "simgen climate", "simgen traces"]
        .iter()
        .filter_map(|command| {
            let page = command_page(&command.replace(' ', "-"));
            check_help_block(env!("CARGO_BIN_EXE_simgen").as_ref(), command, &page)
                .err()
                .map(|error| format!("{error:#}"))
        })
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
