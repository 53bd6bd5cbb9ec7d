//! Parses the supported shell subset: words, `'…'` and `"…"` quoting, backslash escapes,
//! `#` comments and `|` pipelines. Everything else that a shell would treat specially
//! (redirections, `;`, `&&`, `||`, `&`, subshells, backticks, `$(…)`, variables) is refused.

use crate::abi::ToolError;
use crate::glob;

/// One word of a command, after quote removal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Word {
    /// The literal text.
    pub(super) text: String,
    /// A glob pattern (quoted metacharacters escaped) if the word has unquoted `*`, `?` or `[`.
    pub(super) pattern: Option<String>,
}

/// One stage of a pipeline: the command name and its arguments.
pub(super) type Stage = Vec<Word>;

/// Splits a command line into pipeline stages.
///
/// # Errors
/// Returns a bad-arguments error naming the unsupported syntax or the quoting problem.
pub(super) fn parse(line: &str) -> Result<Vec<Stage>, ToolError> {
    let mut parser = Parser {
        chars: line.chars().collect(),
        pos: 0,
    };
    parser.parse()
}

struct Parser {
    chars: Vec<char>,
    pos: usize,
}

/// A word under construction.
#[derive(Default)]
struct WordBuf {
    text: String,
    pattern: String,
    has_meta: bool,
    started: bool,
}

impl WordBuf {
    fn push_quoted(&mut self, c: char) {
        self.started = true;
        self.text.push(c);
        if matches!(c, '*' | '?' | '[' | ']' | '\\' | '{' | '}' | ',') {
            self.pattern.push('\\');
        }
        self.pattern.push(c);
    }

    fn push_unquoted(&mut self, c: char) {
        self.started = true;
        self.text.push(c);
        if matches!(c, '*' | '?' | '[') {
            self.has_meta = true;
        }
        if matches!(c, '\\' | '{' | '}' | ',') {
            // Brace expansion is not supported: keep braces literal in patterns.
            self.pattern.push('\\');
        }
        self.pattern.push(c);
    }

    fn finish(&mut self, stage: &mut Stage) {
        if self.started {
            let word = std::mem::take(self);
            let has_meta = word.has_meta && glob::has_meta(&word.pattern);
            stage.push(Word {
                text: word.text,
                pattern: has_meta.then_some(word.pattern),
            });
        }
    }
}

impl Parser {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    fn parse(&mut self) -> Result<Vec<Stage>, ToolError> {
        let mut stages = Vec::new();
        let mut stage = Stage::new();
        let mut word = WordBuf::default();
        while let Some(c) = self.peek() {
            self.pos += 1;
            match c {
                ' ' | '\t' => word.finish(&mut stage),
                '#' if !word.started => break,
                '\'' => self.single_quoted(&mut word)?,
                '"' => self.double_quoted(&mut word)?,
                '\\' => match self.peek() {
                    Some('\n') => self.pos += 1,
                    Some(next) => {
                        self.pos += 1;
                        word.push_quoted(next);
                    }
                    None => word.push_quoted('\\'),
                },
                '$' => {
                    self.check_dollar()?;
                    word.push_unquoted('$');
                }
                '|' => {
                    if self.peek() == Some('|') {
                        return Err(unsupported("||", "run one pipeline per call"));
                    }
                    word.finish(&mut stage);
                    if stage.is_empty() {
                        return Err(ToolError::bad_args(
                            "a pipeline stage is empty; write commands on both sides of |",
                        ));
                    }
                    stages.push(std::mem::take(&mut stage));
                }
                '&' if self.peek() == Some('&') => {
                    return Err(unsupported("&&", "run one pipeline per call"));
                }
                '&' => return Err(unsupported("&", "commands cannot run in the background")),
                ';' | '\n' | '\r' => {
                    return Err(unsupported(
                        "multiple commands (; or a line break)",
                        "run one pipeline per call",
                    ));
                }
                '>' | '<' => {
                    return Err(unsupported(
                        "redirection (> or <)",
                        "nothing can be written, and files are read by naming them as arguments",
                    ));
                }
                '`' => {
                    return Err(unsupported(
                        "command substitution (`...`)",
                        "run the inner command in its own call",
                    ));
                }
                '(' | ')' => {
                    return Err(unsupported(
                        "subshells and parentheses",
                        "quote them if they are part of a pattern",
                    ));
                }
                _ => word.push_unquoted(c),
            }
        }
        word.finish(&mut stage);
        if stage.is_empty() {
            if stages.is_empty() {
                return Err(ToolError::bad_args(format!(
                    "the command is empty; {}",
                    super::SUPPORTED
                )));
            }
            return Err(ToolError::bad_args(
                "a pipeline stage is empty; write a command after the last |",
            ));
        }
        stages.push(stage);
        Ok(stages)
    }

    fn single_quoted(&mut self, word: &mut WordBuf) -> Result<(), ToolError> {
        word.started = true;
        loop {
            match self.peek() {
                None => {
                    return Err(ToolError::bad_args(
                        "unclosed single quote ('); add the closing quote",
                    ));
                }
                Some('\'') => {
                    self.pos += 1;
                    return Ok(());
                }
                Some(c) => {
                    self.pos += 1;
                    word.push_quoted(c);
                }
            }
        }
    }

    fn double_quoted(&mut self, word: &mut WordBuf) -> Result<(), ToolError> {
        word.started = true;
        loop {
            let Some(c) = self.peek() else {
                return Err(ToolError::bad_args(
                    "unclosed double quote (\"); add the closing quote",
                ));
            };
            self.pos += 1;
            match c {
                '"' => return Ok(()),
                '\\' => match self.peek() {
                    Some(next @ ('"' | '\\' | '$' | '`')) => {
                        self.pos += 1;
                        word.push_quoted(next);
                    }
                    Some('\n') => self.pos += 1,
                    _ => word.push_quoted('\\'),
                },
                '$' => {
                    self.check_dollar()?;
                    word.push_quoted('$');
                }
                '`' => {
                    return Err(unsupported(
                        "command substitution (`...`)",
                        "run the inner command in its own call",
                    ));
                }
                _ => word.push_quoted(c),
            }
        }
    }

    /// Refuses `$NAME`, `${…}`, `$(…)` and special parameters; a lone `$` stays literal.
    fn check_dollar(&self) -> Result<(), ToolError> {
        match self.peek() {
            Some('(') => Err(unsupported(
                "command substitution ($(...))",
                "run the inner command in its own call",
            )),
            Some(c) if c.is_ascii_alphanumeric() || "_{?#@*$!-".contains(c) => Err(unsupported(
                "variables ($NAME)",
                "there are no variables; write the value itself, or put a literal $ in single quotes",
            )),
            _ => Ok(()),
        }
    }
}

fn unsupported(what: &str, hint: &str) -> ToolError {
    ToolError::bad_args(format!(
        "unsupported shell syntax: {what}; {hint}. {}",
        super::SUPPORTED
    ))
}
