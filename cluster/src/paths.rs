//! Node-local path templates.
//!
//! A template is a path with placeholders, expanded on each rank:
//! `{node}`, `{rank}`, `{local_rank}`, environment variables as `$VAR` or
//! `${VAR}`, and a leading `~/` for `$HOME`. So one command line works on one
//! machine with pretend nodes (`--dest /tmp/bb/node{node}`) and on a cluster
//! (`--dest '$TMPDIR/data'`, `--dest /mnt/bb/$USER`).

use std::path::PathBuf;

/// The values placeholders expand to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PathVars {
    /// Node index.
    pub node: usize,
    /// World rank.
    pub rank: usize,
    /// Rank within the node.
    pub local_rank: usize,
}

/// A template that cannot be expanded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TemplateError {
    /// `{name}` with an unknown name.
    #[error("path template {template:?}: unknown placeholder {{{name}}}; use {{node}}, {{rank}} or {{local_rank}}")]
    UnknownPlaceholder {
        /// The template.
        template: String,
        /// The placeholder's name.
        name: String,
    },
    /// `{` or `${` without its `}`.
    #[error("path template {template:?}: unclosed brace")]
    Unclosed {
        /// The template.
        template: String,
    },
    /// An environment variable that is not set.
    #[error("path template {template:?}: environment variable ${name} is not set")]
    UnsetVariable {
        /// The template.
        template: String,
        /// The variable.
        name: String,
    },
    /// Nothing left after expansion.
    #[error("path template {template:?} expands to an empty path")]
    Empty {
        /// The template.
        template: String,
    },
}

/// Expand `template` with `vars` and the process environment.
pub fn expand(template: &str, vars: &PathVars) -> Result<PathBuf, TemplateError> {
    expand_with(template, vars, |name| std::env::var(name).ok())
}

/// Expand `template` with `vars` and the variables `lookup` returns. Pure.
pub fn expand_with(
    template: &str,
    vars: &PathVars,
    lookup: impl Fn(&str) -> Option<String>,
) -> Result<PathBuf, TemplateError> {
    let unclosed = || TemplateError::Unclosed { template: template.to_owned() };
    let variable = |name: &str| {
        lookup(name)
            .ok_or_else(|| TemplateError::UnsetVariable { template: template.to_owned(), name: name.to_owned() })
    };
    let mut out = String::with_capacity(template.len() + 16);
    let mut rest = template;
    if let Some(after) = rest.strip_prefix("~/") {
        out.push_str(&variable("HOME")?);
        out.push('/');
        rest = after;
    }
    while let Some(c) = rest.chars().next() {
        match c {
            '{' => {
                let close = rest.find('}').ok_or_else(unclosed)?;
                let name = &rest[1..close];
                let value = match name {
                    "node" => vars.node,
                    "rank" => vars.rank,
                    "local_rank" => vars.local_rank,
                    _ => {
                        return Err(TemplateError::UnknownPlaceholder {
                            template: template.to_owned(),
                            name: name.to_owned(),
                        });
                    }
                };
                out.push_str(&value.to_string());
                rest = &rest[close + 1..];
            }
            '$' if rest[1..].starts_with('{') => {
                let close = rest.find('}').ok_or_else(unclosed)?;
                out.push_str(&variable(&rest[2..close])?);
                rest = &rest[close + 1..];
            }
            '$' => {
                let name_len =
                    rest[1..].find(|ch: char| !(ch.is_ascii_alphanumeric() || ch == '_')).unwrap_or(rest.len() - 1);
                if name_len == 0 {
                    out.push('$');
                    rest = &rest[1..];
                } else {
                    out.push_str(&variable(&rest[1..=name_len])?);
                    rest = &rest[1 + name_len..];
                }
            }
            _ => {
                out.push(c);
                rest = &rest[c.len_utf8()..];
            }
        }
    }
    if out.is_empty() {
        return Err(TemplateError::Empty { template: template.to_owned() });
    }
    Ok(PathBuf::from(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    const VARS: PathVars = PathVars { node: 3, rank: 7, local_rank: 1 };

    fn env(name: &str) -> Option<String> {
        match name {
            "TMPDIR" => Some("/scratch/job42".into()),
            "USER" => Some("ada".into()),
            "HOME" => Some("/home/ada".into()),
            _ => None,
        }
    }

    #[test]
    fn placeholders_and_variables_expand() {
        let cases = [
            ("/tmp/bb/node{node}", "/tmp/bb/node3"),
            ("/tmp/r{rank}/l{local_rank}", "/tmp/r7/l1"),
            ("$TMPDIR/data", "/scratch/job42/data"),
            ("${TMPDIR}x/{node}", "/scratch/job42x/3"),
            ("/mnt/bb/$USER", "/mnt/bb/ada"),
            ("~/cache", "/home/ada/cache"),
            ("/cost$", "/cost$"),
            ("/a/$/b", "/a/$/b"),
        ];
        for (template, want) in cases {
            assert_eq!(expand_with(template, &VARS, env).unwrap(), PathBuf::from(want), "{template}");
        }
    }

    #[test]
    fn bad_templates_are_named_errors() {
        assert!(
            matches!(expand_with("/x/{host}", &VARS, env), Err(TemplateError::UnknownPlaceholder { name, .. }) if name == "host")
        );
        assert!(matches!(expand_with("/x/{node", &VARS, env), Err(TemplateError::Unclosed { .. })));
        assert!(matches!(expand_with("/x/${TMPDIR", &VARS, env), Err(TemplateError::Unclosed { .. })));
        let err = expand_with("$SLURM_TMP/x", &VARS, env).unwrap_err();
        assert!(err.to_string().contains("$SLURM_TMP"), "{err}");
        assert!(matches!(expand_with("", &VARS, env), Err(TemplateError::Empty { .. })));
    }
}
