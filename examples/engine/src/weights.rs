//! Random weights, made in code at start-up from a seed (nothing is downloaded): a splitmix64
//! stream turned into uniform values of the asked standard deviation. The same seed gives the
//! same model, so the same prompt always gets the same (gibberish) answer.

use candle_core::{Device, Result, Tensor};

/// A seeded source of weight tensors.
#[derive(Debug)]
pub struct Weights {
    state: u64,
    device: Device,
}

impl Weights {
    /// A source seeded with `seed`, making tensors on `device`.
    pub fn new(seed: u64, device: Device) -> Self {
        Self {
            state: seed,
            device,
        }
    }

    fn next(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A `rows × cols` tensor of uniform values with standard deviation `std`.
    pub fn matrix(&mut self, rows: usize, cols: usize, std: f32) -> Result<Tensor> {
        // Uniform on [-a, a] has standard deviation a / √3.
        let a = std * 3f32.sqrt();
        let values: Vec<f32> = (0..rows * cols)
            .map(|_| {
                let unit = (self.next() >> 40) as f32 / (1u64 << 24) as f32; // [0, 1)
                (unit * 2.0 - 1.0) * a
            })
            .collect();
        Tensor::from_vec(values, (rows, cols), &self.device)
    }

    /// A vector of ones (an RMSNorm's scale).
    pub fn ones(&self, len: usize) -> Result<Tensor> {
        Tensor::ones(len, candle_core::DType::F32, &self.device)
    }
}
