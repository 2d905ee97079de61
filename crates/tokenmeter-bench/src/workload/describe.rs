//! The workload in words, for the table and the `run` block: where prompts come from, their
//! lengths, and whether those lengths are exact (`--tokenizer`) or estimates.

use super::Source;

impl Source {
    /// The workload in words, saying whether lengths are exact or estimates.
    pub(crate) fn describe(&self) -> String {
        match self {
            Source::Synthetic {
                input,
                output,
                tokenizer,
                shared_prefix,
                turns,
            } => {
                let lengths = match tokenizer {
                    Some(t) => format!("exact, tokenizer {}", t.path().display()),
                    None => "estimated: one per word, no --tokenizer".to_owned(),
                };
                let mut text = format!(
                    "synthetic prompts, input {input} tok ({lengths}), output {output} tok"
                );
                if let Some(p) = shared_prefix {
                    text += &format!(
                        ", after one of {} shared prefixes of {} tok",
                        p.groups, p.tokens
                    );
                }
                if *turns > 1 {
                    text += &format!(", conversations of {turns} turns");
                }
                text
            }
            Source::Dataset { entries, output } => {
                let turns: usize = entries.iter().map(|e| 1 + e.next.len()).sum();
                let exact = entries.iter().all(|e| e.input_exact);
                format!(
                    "dataset of {} prompts{} (output {output} tok when not given; input lengths {})",
                    entries.len(),
                    if turns > entries.len() {
                        format!(" in conversations, {turns} turns")
                    } else {
                        String::new()
                    },
                    if exact {
                        "exact"
                    } else {
                        "estimated: one token per word, no --tokenizer"
                    }
                )
            }
        }
    }
}
