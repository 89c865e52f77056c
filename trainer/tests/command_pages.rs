//! Every `trainer` command's page in `docs/commands/` shows the command's
//! `--help` as the binary prints it, so no flag goes undocumented and no
//! page describes a flag that is gone (`STAGEHAND_UPDATE_DOCS=1` rewrites
//! the blocks).

use e2e::cli_docs::check_command_pages;

#[test]
fn every_command_page_shows_the_help_the_binary_prints() {
    // Every model has a page of its own: adding a model adds one.
    let models: Vec<String> = trainer::models::MODELS.iter().map(|m| format!("trainer train {}", m.name)).collect();
    let mut commands =
        vec!["trainer train", "trainer models", "trainer infer", "trainer plot", "trainer exchange-model"];
    commands.extend(models.iter().map(String::as_str));
    if let Err(error) = check_command_pages(env!("CARGO_BIN_EXE_trainer").as_ref(), &commands) {
        panic!("{error}");
    }
}
