//! A small Hugging Face tokenizer made in code for the tests: nothing is downloaded.

use std::path::{Path, PathBuf};

use tokenizers::models::bpe::{BPE, BpeTrainer};
use tokenizers::pre_tokenizers::byte_level::ByteLevel;
use tokenizers::{
    AddedToken, NormalizerWrapper, PostProcessorWrapper, TokenizerBuilder, TokenizerImpl,
};

/// Trains a byte-level BPE tokenizer (GPT-2's scheme, 400 tokens) on a few sentences and saves
/// it as `tokenizer.json` in `dir`; returns its path.
pub fn small_bpe(dir: &Path) -> PathBuf {
    let mut trainer = BpeTrainer::builder()
        .vocab_size(400)
        .min_frequency(1)
        .show_progress(false)
        .special_tokens(vec![AddedToken::from("<|endoftext|>", true)])
        .initial_alphabet(ByteLevel::alphabet().into_iter().collect())
        .build();
    let mut tokenizer: TokenizerImpl<
        BPE,
        NormalizerWrapper,
        ByteLevel,
        PostProcessorWrapper,
        ByteLevel,
    > = TokenizerBuilder::new()
        .with_model(BPE::default())
        .with_pre_tokenizer(Some(ByteLevel::default()))
        .with_decoder(Some(ByteLevel::default()))
        .build()
        .expect("a tokenizer");
    let corpus = [
        "the model reads the prompt and writes the answer token by token",
        "a server batches requests and the queue grows when the load is high",
        "time to first token and inter token latency are what users feel",
        "prefill costs grow with the prompt while decode steps grow with the batch",
        "every request ends once with an outcome and its counts of tokens",
    ];
    let lines: Vec<String> = (0..20).flat_map(|_| corpus.map(String::from)).collect();
    tokenizer
        .train(&mut trainer, lines.into_iter())
        .expect("training");
    let path = dir.join("tokenizer.json");
    tokenizer.save(&path, false).expect("saving the tokenizer");
    path
}
