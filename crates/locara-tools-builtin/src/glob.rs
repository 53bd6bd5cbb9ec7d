//! Shell-style glob patterns, compiled to anchored regular expressions.
//!
//! Supported syntax: `*` (any run of characters except `/`), `**` (any run including `/`;
//! `**/` also matches no directory at all), `?` (one character except `/`),
//! `[abc]`, `[a-z]`, `[!a]` / `[^a]`, `{a,b}` alternatives (nestable) and `\x` to escape.

use regex::{Regex, RegexBuilder};

#[cfg(test)]
mod tests;

/// A compiled glob pattern.
#[derive(Debug, Clone)]
pub(crate) struct Glob {
    regex: Regex,
    has_slash: bool,
}

impl Glob {
    /// Compiles `pattern`.
    ///
    /// # Errors
    /// Returns a one-line description if the pattern is malformed (e.g. an unclosed `{`).
    pub(crate) fn new(pattern: &str, case_insensitive: bool) -> Result<Glob, String> {
        Glob::with_options(pattern, case_insensitive, false)
    }

    /// Compiles `pattern`; with `star_matches_slash`, `*` and `?` also match `/`
    /// (the semantics of `find -path`).
    ///
    /// # Errors
    /// Returns a one-line description if the pattern is malformed (e.g. an unclosed `{`).
    pub(crate) fn with_options(
        pattern: &str,
        case_insensitive: bool,
        star_matches_slash: bool,
    ) -> Result<Glob, String> {
        let source = to_regex(pattern, star_matches_slash)?;
        let regex = RegexBuilder::new(&source)
            .case_insensitive(case_insensitive)
            .dot_matches_new_line(true)
            .build()
            .map_err(|e| format!("invalid glob \"{pattern}\": {}", crate::regex_error(&e)))?;
        Ok(Glob {
            regex,
            has_slash: pattern.contains('/'),
        })
    }

    /// Whether the whole of `text` matches.
    pub(crate) fn is_match(&self, text: &str) -> bool {
        self.regex.is_match(text)
    }

    /// Matches a relative path the way `.gitignore`-style filters do: a pattern with a `/`
    /// matches the whole relative path, one without matches the file name alone.
    pub(crate) fn matches_path(&self, rel: &str) -> bool {
        if self.has_slash {
            self.is_match(rel.trim_start_matches("./"))
        } else {
            self.is_match(rel.rsplit('/').next().unwrap_or(rel))
        }
    }
}

/// Whether `word` contains an unescaped glob metacharacter.
pub(crate) fn has_meta(word: &str) -> bool {
    let mut chars = word.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                chars.next();
            }
            '*' | '?' | '[' => return true,
            _ => {}
        }
    }
    false
}

/// Removes backslash escapes, giving the literal text a metacharacter-free pattern stands for.
pub(crate) fn unescape(word: &str) -> String {
    let mut out = String::with_capacity(word.len());
    let mut chars = word.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            if let Some(next) = chars.next() {
                out.push(next);
            }
        } else {
            out.push(c);
        }
    }
    out
}

fn to_regex(pattern: &str, star_matches_slash: bool) -> Result<String, String> {
    let (any_run, any_one) = if star_matches_slash {
        (".*", ".")
    } else {
        ("[^/]*", "[^/]")
    };
    let chars: Vec<char> = pattern.chars().collect();
    let mut out = String::from("^");
    let mut i = 0;
    let mut brace_depth = 0usize;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '*' => {
                let double = chars.get(i + 1) == Some(&'*');
                if double {
                    let at_start = i == 0 || chars[i - 1] == '/';
                    let slash_after = chars.get(i + 2) == Some(&'/');
                    if at_start && slash_after {
                        // `**/` matches zero or more whole directories.
                        out.push_str("(?:[^/]*/)*");
                        i += 3;
                    } else {
                        out.push_str(".*");
                        i += 2;
                    }
                } else {
                    out.push_str(any_run);
                    i += 1;
                }
            }
            '?' => {
                out.push_str(any_one);
                i += 1;
            }
            '[' => match class(&chars, i) {
                Some((class, next)) => {
                    out.push_str(&class);
                    i = next;
                }
                None => {
                    out.push_str("\\[");
                    i += 1;
                }
            },
            '{' => {
                brace_depth += 1;
                out.push_str("(?:");
                i += 1;
            }
            ',' if brace_depth > 0 => {
                out.push('|');
                i += 1;
            }
            '}' if brace_depth > 0 => {
                brace_depth -= 1;
                out.push(')');
                i += 1;
            }
            '\\' => {
                if let Some(&next) = chars.get(i + 1) {
                    out.push_str(&regex::escape(&next.to_string()));
                    i += 2;
                } else {
                    out.push_str("\\\\");
                    i += 1;
                }
            }
            _ => {
                out.push_str(&regex::escape(&c.to_string()));
                i += 1;
            }
        }
    }
    if brace_depth > 0 {
        return Err(format!("invalid glob \"{pattern}\": unclosed '{{'"));
    }
    out.push('$');
    Ok(out)
}

/// Translates the bracket expression starting at `chars[start] == '['`.
///
/// Returns the regex class and the index after the closing `]`, or `None` if unclosed.
fn class(chars: &[char], start: usize) -> Option<(String, usize)> {
    let mut i = start + 1;
    let mut out = String::from("[");
    if matches!(chars.get(i), Some('!' | '^')) {
        out.push('^');
        i += 1;
    }
    let first = i;
    while i < chars.len() {
        let c = chars[i];
        if c == ']' && i > first {
            out.push(']');
            return Some((out, i + 1));
        }
        match c {
            '\\' | '[' | ']' | '&' | '~' => {
                out.push('\\');
                out.push(c);
            }
            '-' if i == first || chars.get(i + 1) == Some(&']') => out.push_str("\\-"),
            _ => out.push(c),
        }
        i += 1;
    }
    None
}
