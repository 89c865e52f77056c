//! The command pages in `docs/commands/` show each command's `--help`
//! verbatim, so that every flag a user can pass is on the page and no page
//! describes a flag that is gone. [`check_help_block`] compares the block
//! with the binary's output; with `STAGEHAND_UPDATE_DOCS=1` it rewrites the
//! block instead (the only way the blocks are meant to change).
//!
//! A page marks the block with the command it shows:
//!
//! ````markdown
//! <!-- help: stager stage -->
//! ```text
//! Copy the dataset into node-local storage ...
//! ```
//! ````

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context as _, bail};

/// The location of the help block of `command` in `page`: the byte range
/// of the text between the opening ```` ```text ```` line and the closing
/// fence.
fn help_block(page: &str, command: &str) -> Option<std::ops::Range<usize>> {
    let marker = format!("<!-- help: {command} -->\n```text\n");
    let start = page.find(&marker)? + marker.len();
    if page[start..].starts_with("```") {
        return Some(start..start);
    }
    let end = start + page[start..].find("\n```")? + 1;
    Some(start..end)
}

/// Compare the help block of `command` (`stager stage`: the binary's name,
/// then the subcommand) in `page` with what `binary <subcommand> --help`
/// prints; under `STAGEHAND_UPDATE_DOCS=1`, write the binary's text into
/// the page instead.
fn check_help_block(binary: &Path, command: &str, page: &Path) -> anyhow::Result<()> {
    let subcommand: Vec<&str> = command.split_whitespace().skip(1).collect();
    let output = Command::new(binary)
        .args(&subcommand)
        .arg("--help")
        .output()
        .with_context(|| format!("running `{command} --help`"))?;
    if !output.status.success() {
        bail!("`{command} --help` exited with {}: {}", output.status, String::from_utf8_lossy(&output.stderr));
    }
    let printed = String::from_utf8_lossy(&output.stdout).trim_end().to_string() + "\n";
    let text = std::fs::read_to_string(page).with_context(|| format!("reading {}", page.display()))?;
    let Some(range) = help_block(&text, command) else {
        bail!("{} has no `<!-- help: {command} -->` followed by a ```text block", page.display());
    };
    if text[range.clone()] == printed {
        return Ok(());
    }
    if std::env::var_os("STAGEHAND_UPDATE_DOCS").is_some_and(|v| v == "1") {
        let mut updated = text;
        updated.replace_range(range, &printed);
        return std::fs::write(page, updated).with_context(|| format!("writing {}", page.display()));
    }
    bail!(
        "{} shows another `{command} --help` than the binary prints; rerun with STAGEHAND_UPDATE_DOCS=1 \
         to rewrite the block, then read the diff\n--- page\n{}\n--- binary\n{printed}",
        page.display(),
        &text[range]
    )
}

/// `docs/commands/NAME.md` of this repository.
fn command_page(name: &str) -> PathBuf {
    let tests_crate = Path::new(env!("CARGO_MANIFEST_DIR"));
    let repository = tests_crate.parent().unwrap_or(tests_crate);
    repository.join("docs").join("commands").join(format!("{name}.md"))
}

/// [`check_help_block`] for each of `commands` of `binary`, each on its page
/// `docs/commands/<command with hyphens>.md`; all failures in one message.
pub fn check_command_pages(binary: &Path, commands: &[&str]) -> anyhow::Result<()> {
    let failures: Vec<String> = commands
        .iter()
        .filter_map(|command| {
            let page = command_page(&command.replace(' ', "-"));
            check_help_block(binary, command, &page).err().map(|error| format!("{error:#}"))
        })
        .collect();
    if failures.is_empty() { Ok(()) } else { bail!("{}", failures.join("\n\n")) }
}

#[cfg(test)]
mod tests {
    use super::help_block;

    #[test]
    fn the_help_block_is_the_text_between_the_fences_after_the_marker() {
        let page = "# x\n<!-- help: a b -->\n```text\nUsage: a b\n  --flag\n```\nafter\n";
        let range = help_block(page, "a b").unwrap();
        assert_eq!(&page[range], "Usage: a b\n  --flag\n");
    }

    #[test]
    fn an_empty_block_is_found_so_it_can_be_filled() {
        let page = "<!-- help: a b -->\n```text\n```\n";
        let range = help_block(page, "a b").unwrap();
        assert!(range.is_empty());
        assert_eq!(&page[range.end..], "```\n");
    }

    #[test]
    fn a_page_without_the_marker_has_no_block() {
        assert!(help_block("```text\nUsage\n```\n", "a b").is_none());
        assert!(help_block("<!-- help: a c -->\n```text\nUsage\n```\n", "a b").is_none());
    }
}
