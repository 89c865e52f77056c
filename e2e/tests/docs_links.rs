//! Every relative link in the repository's Markdown (README, `docs/`, the
//! crates' and tools' pages) points at a file that exists, and every
//! `#anchor` into a Markdown file names one of its headings, so the docs a
//! newcomer follows never lead nowhere.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// The Markdown files of the repository, outside build output and
/// virtual environments.
fn markdown_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        if path.is_dir() {
            if !(name.starts_with('.') || name == "target" || name == "corpus" || name == "artifacts") {
                markdown_files(&path, out);
            }
        } else if name.ends_with(".md") {
            out.push(path);
        }
    }
}

/// The targets of inline links `[text](target)` outside code blocks and
/// code spans.
fn link_targets(text: &str) -> Vec<String> {
    let mut targets = Vec::new();
    let mut in_block = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_block = !in_block;
            continue;
        }
        if in_block {
            continue;
        }
        // Code spans hold examples, not links.
        let prose: String = line.split('`').step_by(2).collect::<Vec<_>>().join(" ");
        let mut rest = prose.as_str();
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let Some(end) = after.find(')') else { break };
            targets.push(after[..end].trim().to_string());
            rest = &after[end..];
        }
    }
    targets
}

/// GitHub's anchor for a heading: lower case, spaces to hyphens,
/// punctuation other than hyphens and underscores dropped.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

fn anchors(markdown: &str) -> Vec<String> {
    let mut in_block = false;
    let mut found = Vec::new();
    for line in markdown.lines() {
        if line.trim_start().starts_with("```") {
            in_block = !in_block;
        } else if !in_block && line.starts_with('#') {
            found.push(anchor(line.trim_start_matches('#')));
        }
    }
    found
}

#[test]
fn every_relative_link_in_the_markdown_resolves() {
    let root = repository();
    let mut files = Vec::new();
    markdown_files(&root, &mut files);
    assert!(files.iter().any(|f| f.ends_with("README.md")), "no README.md under {}", root.display());
    let mut broken = Vec::new();
    let mut checked = 0;
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        for target in link_targets(&text) {
            if target.contains("://") || target.starts_with("mailto:") || target.is_empty() {
                continue;
            }
            checked += 1;
            let (path, fragment) = match target.split_once('#') {
                Some((path, fragment)) => (path, Some(fragment)),
                None => (target.as_str(), None),
            };
            let resolved = if path.is_empty() { file.clone() } else { file.parent().unwrap().join(path) };
            let shown = file.strip_prefix(&root).unwrap().display().to_string();
            if !resolved.exists() {
                broken.push(format!("{shown}: {target} (no such file)"));
                continue;
            }
            if let (Some(fragment), true) = (fragment, resolved.extension().is_some_and(|e| e == "md")) {
                let headings = anchors(&std::fs::read_to_string(&resolved).unwrap());
                if !headings.iter().any(|h| h == fragment) {
                    broken.push(format!("{shown}: {target} (no heading with that anchor)"));
                }
            }
        }
    }
    println!("{checked} relative links in {} Markdown files", files.len());
    assert!(checked > 0, "found no relative links: the scan is broken");
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn anchors_follow_githubs_rule() {
    assert_eq!(anchor(" Quick start"), "quick-start");
    assert_eq!(anchor("trainer: step time (issue #6)"), "trainer-step-time-issue-6");
    assert_eq!(link_targets("see [a](b.md) and `[c](d.md)` and [e](f.md#g)"), vec!["b.md", "f.md#g"]);
}
