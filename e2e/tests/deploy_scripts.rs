//! The Slurm scripts in `deploy/slurm` and the demo (`demo/run.sh`) parse
//! as bash, and every option they pass to `stager`, `simgen` and `trainer`
//! (on the command lines and in the option lists a site edits) is one that
//! program's `--help` lists, so a renamed flag breaks this test instead of
//! a user's job or a newcomer's first command. (Slurm itself does not run
//! here; the scripts' `srun` lines are checked, not run. The demo runs in
//! release, minutes of training, so `make demo` runs it, not CI.)

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

fn scripts() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/slurm");
    let mut found: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "sbatch"))
        .collect();
    found.sort();
    found.push(Path::new(env!("CARGO_MANIFEST_DIR")).join("../demo/run.sh"));
    found
}

/// (program, subcommand) → the options the script gives it.
fn options_used(script: &str) -> Vec<((String, String), BTreeSet<String>)> {
    let mut uses: Vec<((String, String), BTreeSet<String>)> = Vec::new();
    // Join continuation lines so a command is one line.
    let joined = script.replace("\\\n", " ");
    let flags = |text: &str| -> BTreeSet<String> {
        text.split_whitespace()
            .filter_map(|w| w.trim_matches(|c| c == '"' || c == '}' || c == ')').strip_prefix("--"))
            .filter(|w| !w.is_empty() && w.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'))
            .map(str::to_owned)
            .collect()
    };
    for line in joined.lines() {
        for program in ["stager", "simgen", "trainer"] {
            let marker = format!("\"$BIN/{program}\" ");
            if let Some(at) = line.find(&marker) {
                let rest = &line[at + marker.len()..];
                let sub = rest.split_whitespace().next().unwrap_or_default().to_owned();
                let sub = if (program, sub.as_str()) == ("trainer", "train") { trained_model(rest) } else { sub };
                uses.push(((program.into(), sub), flags(rest)));
            }
        }
        // The option lists a site edits, e.g. TRAIN_ARGS=${TRAIN_ARGS:---optimizer adam ...},
        // the demo's `train "title" --model ...` (its function that calls the
        // trainer) and its list of universe options.
        let lists = [
            ("TRAIN_ARGS=${TRAIN_ARGS:-", "trainer", "train"),
            ("SIMGEN_ARGS=${SIMGEN_ARGS:-", "simgen", "multislice"),
            ("train \"", "trainer", "train"),
            ("universes=(", "simgen", "cosmo"),
        ];
        for (marker, program, sub) in lists {
            if let Some(at) = line.find(marker).filter(|&at| line[..at].trim().is_empty()) {
                let rest = &line[at + marker.len()..];
                let sub = if (program, sub) == ("trainer", "train") { trained_model(rest) } else { sub.into() };
                uses.push(((program.into(), sub), flags(rest)));
            }
        }
    }
    uses
}

/// `train MODEL` for a `trainer train` command line: the model its literal
/// `--model NAME` names, cosmoflow (the default) when it names none, and
/// `train *` when the model is a variable (any model's options may follow).
fn trained_model(command: &str) -> String {
    let mut words = command.split_whitespace().map(|w| w.trim_matches('"'));
    match words.by_ref().skip_while(|&w| w != "--model").nth(1) {
        Some(name) if name.starts_with('$') => "train *".into(),
        Some(name) => format!("train {name}"),
        None => "train cosmoflow".into(),
    }
}

/// The `--help` texts a command's flags are checked against: for `trainer
/// train MODEL` that model's (every model's for `train *`), without
/// `--model`, which the trainer takes before the model's command.
fn helps_of(program: &str, sub: &str, flags: &mut BTreeSet<String>) -> Vec<String> {
    let help = |args: &[&str]| {
        let output = Command::new(e2e::workspace_binary(program)).args(args).arg("--help").output().unwrap();
        assert!(output.status.success(), "{program} {} --help failed", args.join(" "));
        String::from_utf8_lossy(&output.stdout).into_owned()
    };
    let Some(model) = sub.strip_prefix("train ") else { return vec![help(&[sub])] };
    flags.remove("model");
    if model != "*" {
        return vec![help(&["train", model])];
    }
    let listed = help(&["train"]);
    let models: Vec<&str> = listed
        .lines()
        .skip_while(|l| !l.starts_with("Models:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    models.iter().map(|m| help(&["train", m])).collect()
}

#[test]
fn the_slurm_scripts_parse_and_pass_only_options_the_programs_have() {
    let scripts = scripts();
    assert!(scripts.len() >= 3, "expected the two Slurm scripts and the demo: {scripts:?}");
    for script in &scripts {
        let syntax = Command::new("bash").arg("-n").arg(script).output().unwrap();
        assert!(syntax.status.success(), "{}: {}", script.display(), String::from_utf8_lossy(&syntax.stderr));
        let text = std::fs::read_to_string(script).unwrap();
        let uses = options_used(&text);
        assert!(!uses.is_empty(), "{}: no stagehand command found", script.display());
        for ((program, sub), mut flags) in uses {
            let helps = helps_of(&program, &sub, &mut flags);
            for flag in &flags {
                assert!(
                    helps
                        .iter()
                        .any(|help| help.contains(&format!("--{flag} ")) || help.contains(&format!("--{flag}\n"))),
                    "{}: `{program} {sub}` has no --{flag}",
                    script.display()
                );
            }
            println!(
                "{}: {program} {sub}: {} options checked",
                script.file_name().unwrap().to_string_lossy(),
                flags.len()
            );
        }
    }
}

/// The Apptainer definition file, checked as far as this machine can
/// without `apptainer` (no package registry we install from carries it):
/// the header names a base image, every section is one Apptainer knows,
/// every `{{ ARGUMENT }}` has a default in `%arguments`, the shell
/// sections parse with `sh -n` for each MPI choice, and the packages and
/// binaries `%post` builds and `%test` runs exist in this workspace.
#[test]
fn the_apptainer_definition_is_well_formed() {
    const SECTIONS: [&str; 11] = [
        "%arguments",
        "%setup",
        "%files",
        "%environment",
        "%post",
        "%runscript",
        "%startscript",
        "%test",
        "%labels",
        "%help",
        "%app",
    ];
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let path = root.join("deploy/apptainer/stagehand.def");
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.starts_with("Bootstrap: docker\nFrom: debian:12\n"), "header: {}", path.display());
    // Section name -> its body.
    let mut sections: Vec<(String, String)> = Vec::new();
    for line in text.lines() {
        if let Some(name) = line.strip_prefix('%').map(|_| line.split_whitespace().next().unwrap()) {
            assert!(SECTIONS.contains(&name), "unknown section {name}");
            sections.push((name.to_owned(), String::new()));
        } else if let Some((_, body)) = sections.last_mut() {
            body.push_str(line);
            body.push('\n');
        }
    }
    let section = |name: &str| sections.iter().find(|(n, _)| n == name).map(|(_, b)| b.as_str()).unwrap();
    let defaults: Vec<(&str, &str)> = section("%arguments")
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| l.split_once('=').unwrap())
        .collect();
    for used in text.split("{{").skip(1).map(|rest| rest.split("}}").next().unwrap().trim()) {
        assert!(defaults.iter().any(|(name, _)| *name == used), "{{{{ {used} }}}} has no default in %arguments");
    }
    for mpi in ["mpich", "openmpi"] {
        for name in ["%post", "%environment", "%runscript", "%test"] {
            let body = section(name).replace("{{ MPI }}", mpi).replace("{{ SRC }}", "/src");
            let check = Command::new("sh").args(["-n", "-c", &body]).output().unwrap();
            assert!(check.status.success(), "{name} with MPI={mpi}: {}", String::from_utf8_lossy(&check.stderr));
        }
    }
    let post = section("%post").replace("\\\n", " ");
    let build = post.lines().find(|l| l.contains("cargo build")).unwrap();
    let words: Vec<&str> = build.split_whitespace().collect();
    for pair in words.windows(2) {
        match pair {
            ["-p", package] => {
                let dir = package.strip_prefix("stagehand-").unwrap();
                assert!(root.join(dir).join("Cargo.toml").is_file(), "no package {package}");
            }
            ["--bin", program] => {
                e2e::workspace_binary(program);
                assert!(section("%test").contains(&format!("{program} --version")), "%test skips {program}");
            }
            _ => {}
        }
    }
}
