//! A tiny Llama: token embeddings, `layers` blocks of RMSNorm → attention with rotary
//! embeddings and a per-sequence KV cache → RMSNorm → SwiGLU MLP, a final RMSNorm and the
//! output projection. Weights are random (see [`Weights`]); the forward passes are real.
//!
//! - [`Model::prefill`] runs one sequence's whole prompt in one pass (causal attention over it)
//!   and fills its cache: its cost grows with the prompt.
//! - [`Model::decode`] runs one token for each of B sequences: the projections and the MLP as
//!   one `[B, hidden]` matmul each, attention per sequence over its own cache.

use candle_core::{D, DType, Device, Result, Tensor};
use candle_nn::ops::{rms_norm, softmax_last_dim};
use candle_nn::rotary_emb::rope;

use crate::kv_cache::SeqCache;
use crate::weights::Weights;

/// The model's shape.
#[derive(Clone, Copy, Debug)]
pub struct ModelConfig {
    /// Vocabulary size.
    pub vocab: usize,
    /// Width of the residual stream.
    pub hidden: usize,
    /// Transformer blocks.
    pub layers: usize,
    /// Attention heads (`hidden` must divide by it, into an even head size).
    pub heads: usize,
    /// Width of the MLP.
    pub ffn: usize,
    /// Most positions a sequence may hold (prompt + output).
    pub max_context: usize,
}

impl ModelConfig {
    /// Size of one head.
    pub fn head_dim(&self) -> usize {
        self.hidden / self.heads
    }

    /// KV-cache bytes per position, all layers (keys and values, f32).
    pub fn kv_bytes_per_token(&self) -> usize {
        self.layers * 2 * self.hidden * 4
    }

    /// Parameters in all.
    pub fn parameters(&self) -> usize {
        let block = 4 * self.hidden * self.hidden + 3 * self.hidden * self.ffn + 2 * self.hidden;
        2 * self.vocab * self.hidden + self.layers * block + self.hidden
    }

    /// Why this shape cannot be built, if it cannot.
    pub fn check(&self) -> std::result::Result<(), String> {
        if self.heads == 0
            || !self.hidden.is_multiple_of(self.heads)
            || !self.head_dim().is_multiple_of(2)
        {
            return Err(format!(
                "--hidden {} must divide by --heads {} into an even head size (e.g. --hidden 256 --heads 4)",
                self.hidden, self.heads
            ));
        }
        if self.vocab < 16 || self.layers == 0 || self.ffn == 0 || self.max_context < 2 {
            return Err("--vocab must be at least 16, and --layers, --ffn at least 1, --max-context at least 2".into());
        }
        Ok(())
    }

    /// A model small enough for tests to run in milliseconds.
    #[cfg(test)]
    pub(crate) fn tiny(max_context: usize) -> Self {
        Self {
            vocab: 64,
            hidden: 32,
            layers: 2,
            heads: 4,
            ffn: 48,
            max_context,
        }
    }
}

/// A projection without bias, `[out, in]`, applied to rows `[n, in]` as `W · xᵀ`: the weight
/// is the left operand, so the matmul streams it once for the whole batch and packs only the
/// small `xᵀ` (with `x · Wᵀ`, gemm packed the whole transposed weight on every call with more
/// than one row, which made a decode step of 2 sequences cost several of 1).
struct Proj {
    w: Tensor,
}

impl Proj {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        self.w.matmul(&x.t()?)?.t()?.contiguous()
    }
}

struct Block {
    attn_norm: Tensor,
    q: Proj,
    k: Proj,
    v: Proj,
    o: Proj,
    mlp_norm: Tensor,
    gate: Proj,
    up: Proj,
    down: Proj,
}

/// The model, its weights and its rotary tables.
pub struct Model {
    config: ModelConfig,
    embed: Tensor,
    blocks: Vec<Block>,
    norm: Tensor,
    head: Proj,
    cos: Tensor,
    sin: Tensor,
    device: Device,
}

impl std::fmt::Debug for Model {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Model")
            .field("config", &self.config)
            .finish()
    }
}

const EPS: f32 = 1e-5;
const ROPE_THETA: f32 = 10_000.0;

impl Model {
    /// A model of `config` with random weights from `seed`, on the CPU.
    pub fn random(config: ModelConfig, seed: u64) -> Result<Self> {
        let device = Device::Cpu;
        let mut w = Weights::new(seed, device.clone());
        let (d, f) = (config.hidden, config.ffn);
        let proj = 0.02;
        let linear = |w: &mut Weights, out: usize, inp: usize| -> Result<Proj> {
            Ok(Proj {
                w: w.matrix(out, inp, proj)?,
            })
        };
        let mut blocks = Vec::with_capacity(config.layers);
        for _ in 0..config.layers {
            blocks.push(Block {
                attn_norm: w.ones(d)?,
                q: linear(&mut w, d, d)?,
                k: linear(&mut w, d, d)?,
                v: linear(&mut w, d, d)?,
                o: linear(&mut w, d, d)?,
                mlp_norm: w.ones(d)?,
                gate: linear(&mut w, f, d)?,
                up: linear(&mut w, f, d)?,
                down: linear(&mut w, d, f)?,
            });
        }
        let embed = w.matrix(config.vocab, d, 1.0)?;
        let head = Proj {
            w: w.matrix(config.vocab, d, proj)?,
        };
        let (cos, sin) = rotary_tables(&config, &device)?;
        Ok(Self {
            config,
            embed,
            blocks,
            norm: w.ones(d)?,
            head,
            cos,
            sin,
            device,
        })
    }

    /// The shape.
    pub fn config(&self) -> &ModelConfig {
        &self.config
    }

    /// An empty cache for a sequence of at most `capacity` positions.
    pub fn new_cache(&self, capacity: usize) -> SeqCache {
        SeqCache::new(
            self.config.layers,
            capacity,
            self.config.kv_bytes_per_token(),
        )
    }

    /// Runs a whole prompt through the model, filling `cache` (which must be empty), and returns
    /// the greedy next token.
    pub fn prefill(&self, prompt: &[u32], cache: &mut SeqCache) -> Result<u32> {
        let n = prompt.len();
        let (d, heads, hd) = (
            self.config.hidden,
            self.config.heads,
            self.config.head_dim(),
        );
        let ids = Tensor::new(prompt, &self.device)?;
        let mut x = self.embed.index_select(&ids, 0)?; // [n, d]
        let cos = self.cos.narrow(0, 0, n)?;
        let sin = self.sin.narrow(0, 0, n)?;
        let mask = causal_mask(n, &self.device)?;
        let scale = 1.0 / (hd as f64).sqrt();
        for (l, block) in self.blocks.iter().enumerate() {
            let h = rms_norm(&x, &block.attn_norm, EPS)?;
            let heads_of = |t: Tensor| -> Result<Tensor> {
                t.reshape((1, n, heads, hd))?.transpose(1, 2)?.contiguous()
            };
            let q = rope(&heads_of(block.q.forward(&h)?)?, &cos, &sin)?;
            let k = rope(&heads_of(block.k.forward(&h)?)?, &cos, &sin)?;
            let v = heads_of(block.v.forward(&h)?)?;
            let (k, v) = cache.append(l, &k, &v)?;
            let scores = (q.matmul(&k.t()?.contiguous()?)? * scale)?.broadcast_add(&mask)?;
            let y = softmax_last_dim(&scores)?.matmul(&v.contiguous()?)?; // [1, h, n, hd]
            let y = y.transpose(1, 2)?.reshape((n, d))?;
            x = (x + block.o.forward(&y)?)?;
            x = (&x + mlp(block, &x)?)?;
        }
        let last = x.narrow(0, n - 1, 1)?;
        let next = self.logits(&last)?.argmax(D::Minus1)?.to_vec1::<u32>()?;
        Ok(next[0])
    }

    /// One decode step: `tokens[i]` is the latest token of the sequence whose cache is
    /// `caches[i]`; returns each sequence's greedy next token.
    pub fn decode(&self, tokens: &[u32], caches: &mut [&mut SeqCache]) -> Result<Vec<u32>> {
        let b = tokens.len();
        let (d, heads, hd) = (
            self.config.hidden,
            self.config.heads,
            self.config.head_dim(),
        );
        let positions: Vec<usize> = caches.iter().map(|c| c.len()).collect();
        let ids = Tensor::new(tokens, &self.device)?;
        let mut x = self.embed.index_select(&ids, 0)?; // [b, d]
        let scale = 1.0 / (hd as f64).sqrt();
        for (l, block) in self.blocks.iter().enumerate() {
            // The projections: one [b, d] matmul each for the whole batch.
            let h = rms_norm(&x, &block.attn_norm, EPS)?;
            let (q, k, v) = (
                block.q.forward(&h)?,
                block.k.forward(&h)?,
                block.v.forward(&h)?,
            );
            // Attention: each sequence over its own cache, at its own position.
            let mut outs = Vec::with_capacity(b);
            for (i, cache) in caches.iter_mut().enumerate() {
                let one = |t: &Tensor| -> Result<Tensor> {
                    t.narrow(0, i, 1)?
                        .reshape((1, 1, heads, hd))?
                        .transpose(1, 2)?
                        .contiguous()
                };
                let cos = self.cos.narrow(0, positions[i], 1)?;
                let sin = self.sin.narrow(0, positions[i], 1)?;
                let qi = rope(&one(&q)?, &cos, &sin)?;
                let ki = rope(&one(&k)?, &cos, &sin)?;
                let (ks, vs) = cache.append(l, &ki, &one(&v)?)?;
                let scores = (qi.matmul(&ks.t()?)? * scale)?;
                let y = softmax_last_dim(&scores)?.matmul(&vs)?; // [1, h, 1, hd]
                outs.push(y.reshape((1, d))?);
            }
            let y = Tensor::cat(&outs, 0)?; // [b, d]
            x = (x + block.o.forward(&y)?)?;
            x = (&x + mlp(block, &x)?)?;
        }
        self.logits(&x)?.argmax(D::Minus1)?.to_vec1::<u32>()
    }

    fn logits(&self, x: &Tensor) -> Result<Tensor> {
        self.head.forward(&rms_norm(x, &self.norm, EPS)?)
    }
}

/// The SwiGLU MLP of a block, on its normed input.
fn mlp(block: &Block, x: &Tensor) -> Result<Tensor> {
    let h = rms_norm(x, &block.mlp_norm, EPS)?;
    let gated = (block.gate.forward(&h)?.silu()? * block.up.forward(&h)?)?;
    block.down.forward(&gated)
}

/// cos and sin of every position × frequency: [max_context, head_dim / 2] each.
fn rotary_tables(config: &ModelConfig, device: &Device) -> Result<(Tensor, Tensor)> {
    let half = config.head_dim() / 2;
    let freqs: Vec<f32> = (0..half)
        .map(|i| 1.0 / ROPE_THETA.powf(2.0 * i as f32 / config.head_dim() as f32))
        .collect();
    let freqs = Tensor::new(freqs, device)?.reshape((1, half))?;
    let positions = Tensor::arange(0u32, config.max_context as u32, device)?
        .to_dtype(DType::F32)?
        .reshape((config.max_context, 1))?;
    let angles = positions.broadcast_mul(&freqs)?;
    Ok((angles.cos()?, angles.sin()?))
}

/// 0 on and below the diagonal, −∞ above: [n, n].
fn causal_mask(n: usize, device: &Device) -> Result<Tensor> {
    let values: Vec<f32> = (0..n * n)
        .map(|i| {
            if i % n > i / n {
                f32::NEG_INFINITY
            } else {
                0.0
            }
        })
        .collect();
    Tensor::from_vec(values, (n, n), device)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tiny() -> ModelConfig {
        ModelConfig::tiny(64)
    }

    #[test]
    fn batched_decode_gives_each_sequence_what_it_gets_alone() {
        let model = Model::random(tiny(), 7).expect("model");
        let prompts: [&[u32]; 3] = [&[1, 2, 3, 4, 5], &[9, 8], &[40, 41, 42, 43, 44, 45, 46]];
        // Alone: prefill, then two decode steps of batch 1.
        let alone: Vec<Vec<u32>> = prompts
            .iter()
            .map(|p| {
                let mut cache = model.new_cache(16);
                let mut out = vec![model.prefill(p, &mut cache).expect("prefill")];
                for _ in 0..2 {
                    let next = model.decode(&[*out.last().unwrap()], &mut [&mut cache]);
                    out.push(next.expect("decode")[0]);
                }
                out
            })
            .collect();
        // Together: the same, with the three sequences in one decode batch.
        let mut caches: Vec<SeqCache> = prompts.iter().map(|_| model.new_cache(16)).collect();
        let mut together: Vec<Vec<u32>> = prompts
            .iter()
            .zip(&mut caches)
            .map(|(p, c)| vec![model.prefill(p, c).expect("prefill")])
            .collect();
        for _ in 0..2 {
            let last: Vec<u32> = together.iter().map(|o| *o.last().unwrap()).collect();
            let mut refs: Vec<&mut SeqCache> = caches.iter_mut().collect();
            let next = model.decode(&last, &mut refs).expect("decode");
            for (o, t) in together.iter_mut().zip(next) {
                o.push(t);
            }
        }
        assert_eq!(alone, together);
        assert_eq!(caches[0].len(), 7, "5 prompt positions + 2 decoded");
        assert_eq!(caches[0].bytes(), 16 * tiny().kv_bytes_per_token());
    }

    #[test]
    fn decoding_a_prompt_token_by_token_matches_its_prefill() {
        let model = Model::random(tiny(), 3).expect("model");
        let prompt = [5u32, 6, 7, 8];
        let mut whole = model.new_cache(8);
        let expected = model.prefill(&prompt, &mut whole).expect("prefill");
        let mut cache = model.new_cache(8);
        let mut next = model.prefill(&prompt[..1], &mut cache).expect("prefill");
        for &t in &prompt[1..] {
            next = model.decode(&[t], &mut [&mut cache]).expect("decode")[0];
        }
        assert_eq!(
            next, expected,
            "the KV cache and positions agree with a full pass"
        );
    }

    #[test]
    fn a_bad_shape_is_refused_with_the_flags_to_change() {
        let bad = ModelConfig { heads: 3, ..tiny() };
        assert!(bad.check().unwrap_err().contains("--heads"));
        assert!(tiny().check().is_ok());
    }
}

#[cfg(test)]
mod timing {
    use super::*;

    /// Decode step time by batch size on the default model (prints; run by hand with
    /// `cargo test --release -- --ignored --nocapture step_times`).
    #[test]
    #[ignore = "a measurement, not a check"]
    fn step_times() {
        let config = crate::config::Config::defaults();
        let model = Model::random(config.model, 7).expect("model");
        for b in [1usize, 2, 4, 8] {
            let mut caches: Vec<SeqCache> = (0..b).map(|_| model.new_cache(300)).collect();
            let prompt: Vec<u32> = (0..200).collect();
            let mut last: Vec<u32> = caches
                .iter_mut()
                .map(|c| model.prefill(&prompt, c).expect("prefill"))
                .collect();
            let started = std::time::Instant::now();
            for _ in 0..32 {
                let mut refs: Vec<&mut SeqCache> = caches.iter_mut().collect();
                last = model.decode(&last, &mut refs).expect("decode");
            }
            let step = started.elapsed() / 32;
            println!(
                "batch {b}: decode step {step:?}, {:.0} tokens/s",
                b as f64 / step.as_secs_f64()
            );
        }
    }
}
