//! The cost model's network (candle): an input feature extractor, a schedule embedder and
//! a head that scores (input, schedule) pairs, lower meaning faster.
//!
//! The sparse convolution is written here, as no maintained Rust crate has one: a layer
//! gathers, for every output site, the features of its `3^order` neighbours through the
//! pattern's precomputed table (a missing neighbour reads a zero row), and multiplies the
//! gathered rows by the kernel as one matrix. candle differentiates the gather
//! (`index_select`) and the product, so the whole model trains end to end.

use candle_core::{DType, Device, Module, Tensor};
use candle_nn::{Conv2d, Conv2dConfig, Linear, VarBuilder};

use super::pattern::{self, Pattern, IMAGE_SIDE, IN_CHANNELS, LAYERS};

/// Channels of every convolution layer (WACO's 32, halved for CPU training).
pub const CHANNELS: usize = 16;

/// Width of the input and schedule embeddings.
pub const EMBEDDING: usize = 64;

/// Strided layers of the dense-CNN ablation (256 -> 4).
const DENSE_LAYERS: usize = 6;

/// A linear layer as plain numbers: `out × inputs` row-major weights and `out` biases.
#[derive(Clone, Debug)]
pub struct DenseLayer {
    /// The weights, row-major.
    pub weights: Vec<f32>,
    /// The biases.
    pub bias: Vec<f32>,
    /// Inputs (the weights' row length).
    pub inputs: usize,
}

/// Which input feature extractor a model uses: WACONet, or one of the paper's ablations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Extractor {
    /// Strided sparse convolutions over the nonzero coordinates, every layer pooled.
    WacoNet,
    /// The global sizes only (dimensions and nonzeros): the hand-made-features ablation.
    Handmade,
    /// A dense CNN over a 256x256 downsampled image of the pattern.
    DenseCnn,
}

impl Extractor {
    /// The name the CLI and model files use.
    pub fn name(self) -> &'static str {
        match self {
            Extractor::WacoNet => "waconet",
            Extractor::Handmade => "handmade",
            Extractor::DenseCnn => "dense-cnn",
        }
    }

    /// The extractor named `name`.
    pub fn parse(name: &str) -> Option<Extractor> {
        [Extractor::WacoNet, Extractor::Handmade, Extractor::DenseCnn]
            .into_iter()
            .find(|e| e.name() == name)
    }
}

/// An input as the network reads it, built once and reused every epoch.
pub struct PreparedInput {
    /// Standardized global sizes, `1 × GLOBALS`.
    globals: Tensor,
    /// The sparse pattern's input features and gather tables (WACONet only).
    sparse: Option<(Tensor, Vec<(Tensor, usize)>)>,
    /// The downsampled image, `1 × 1 × side × side` (dense CNN only).
    image: Option<Tensor>,
}

impl PreparedInput {
    /// Prepare the entries at `coords` of a tensor of `dims` for `extractor`, with the
    /// global sizes standardized by `mean` and `std`.
    pub fn new(
        extractor: Extractor,
        dims: &[usize],
        coords: &[i64],
        mean: &[f32],
        std: &[f32],
    ) -> Result<PreparedInput, super::ModelError> {
        let device = Device::Cpu;
        let nonzeros = coords.len() / dims.len().max(1);
        let globals: Vec<f32> = pattern::globals(dims, nonzeros)
            .iter()
            .zip(mean.iter().zip(std))
            .map(|(g, (m, s))| (g - m) / s.max(1e-6))
            .collect();
        let globals = Tensor::from_vec(globals, (1, pattern::GLOBALS), &device)?;
        let sparse = match extractor {
            Extractor::WacoNet => {
                let p = Pattern::new(dims, coords)?;
                let input = Tensor::from_vec(p.input, (p.input_sites, IN_CHANNELS), &device)?;
                let layers = p
                    .layers
                    .into_iter()
                    .map(|l| {
                        let n = l.gather.len();
                        Ok((Tensor::from_vec(l.gather, n, &device)?, l.sites))
                    })
                    .collect::<candle_core::Result<Vec<_>>>()?;
                Some((input, layers))
            }
            _ => None,
        };
        let image = match extractor {
            Extractor::DenseCnn => Some(Tensor::from_vec(
                pattern::image(dims, coords),
                (1, 1, IMAGE_SIDE, IMAGE_SIDE),
                &device,
            )?),
            _ => None,
        };
        Ok(PreparedInput {
            globals,
            sparse,
            image,
        })
    }
}

/// One sparse convolution layer: kernel `(taps · in) × out`, bias, ReLU.
struct SparseConv {
    kernel: Tensor,
    bias: Tensor,
    taps_in: usize,
}

impl SparseConv {
    fn new(taps: usize, input: usize, vb: VarBuilder) -> candle_core::Result<SparseConv> {
        // Kaiming-normal, as WACO initializes its convolutions.
        let stdev = (2.0 / (taps * input) as f64).sqrt();
        let kernel = vb.get_with_hints(
            (taps * input, CHANNELS),
            "kernel",
            candle_nn::Init::Randn { mean: 0.0, stdev },
        )?;
        let bias = vb.get_with_hints(CHANNELS, "bias", candle_nn::Init::Const(0.0))?;
        Ok(SparseConv {
            kernel,
            bias,
            taps_in: taps * input,
        })
    }

    fn forward(&self, x: &Tensor, gather: &Tensor, sites: usize) -> candle_core::Result<Tensor> {
        if sites == 0 {
            return Tensor::zeros((0, CHANNELS), DType::F32, x.device());
        }
        let zero = Tensor::zeros((1, x.dim(1)?), DType::F32, x.device())?;
        let padded = Tensor::cat(&[x, &zero], 0)?;
        padded
            .index_select(gather, 0)?
            .reshape((sites, self.taps_in))?
            .matmul(&self.kernel)?
            .broadcast_add(&self.bias)?
            .relu()
    }
}

/// Two linear layers with a ReLU between them.
struct Mlp {
    first: Linear,
    second: Linear,
}

impl Mlp {
    fn new(input: usize, hidden: usize, output: usize, vb: VarBuilder) -> candle_core::Result<Mlp> {
        Ok(Mlp {
            first: candle_nn::linear(input, hidden, vb.pp("0"))?,
            second: candle_nn::linear(hidden, output, vb.pp("1"))?,
        })
    }

    fn forward(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        self.second.forward(&self.first.forward(x)?.relu()?)
    }
}

enum Features {
    Sparse(Vec<SparseConv>),
    Handmade,
    Dense(Vec<Conv2d>),
}

/// The whole network.
pub struct Net {
    extractor: Extractor,
    features: Features,
    input_mlp: Mlp,
    schedule_mlp: Mlp,
    head: [Linear; 3],
}

impl Net {
    /// A network for inputs of `order` modes and schedule encodings of `schedule_width`,
    /// its parameters taken from (or created in) `vb`.
    pub fn new(
        extractor: Extractor,
        order: usize,
        schedule_width: usize,
        vb: VarBuilder,
    ) -> candle_core::Result<Net> {
        let taps = 3usize.pow(order as u32);
        let (features, width) = match extractor {
            Extractor::WacoNet => {
                let convs = (0..LAYERS)
                    .map(|l| {
                        let input = if l == 0 { IN_CHANNELS } else { CHANNELS };
                        SparseConv::new(taps, input, vb.pp(format!("conv{l}")))
                    })
                    .collect::<candle_core::Result<Vec<_>>>()?;
                (Features::Sparse(convs), LAYERS * CHANNELS)
            }
            Extractor::Handmade => (Features::Handmade, 0),
            Extractor::DenseCnn => {
                let config = Conv2dConfig {
                    padding: 1,
                    stride: 2,
                    ..Default::default()
                };
                let convs = (0..DENSE_LAYERS)
                    .map(|l| {
                        let input = if l == 0 { 1 } else { CHANNELS };
                        candle_nn::conv2d(input, CHANNELS, 3, config, vb.pp(format!("dense{l}")))
                    })
                    .collect::<candle_core::Result<Vec<_>>>()?;
                (Features::Dense(convs), DENSE_LAYERS * CHANNELS)
            }
        };
        Ok(Net {
            extractor,
            features,
            input_mlp: Mlp::new(width + pattern::GLOBALS, 128, EMBEDDING, vb.pp("input"))?,
            schedule_mlp: Mlp::new(schedule_width, 64, EMBEDDING, vb.pp("schedule"))?,
            head: [
                candle_nn::linear(2 * EMBEDDING, 64, vb.pp("head.0"))?,
                candle_nn::linear(64, 32, vb.pp("head.1"))?,
                candle_nn::linear(32, 1, vb.pp("head.2"))?,
            ],
        })
    }

    /// The extractor.
    pub fn extractor(&self) -> Extractor {
        self.extractor
    }

    /// The input's embedding, `1 × EMBEDDING`.
    pub fn embed_input(&self, input: &PreparedInput) -> candle_core::Result<Tensor> {
        let device = input.globals.device();
        let pooled: Vec<Tensor> = match (&self.features, &input.sparse, &input.image) {
            (Features::Sparse(convs), Some((x, layers)), _) => {
                let mut x = x.clone();
                let mut pools = Vec::with_capacity(convs.len());
                for (conv, (gather, sites)) in convs.iter().zip(layers) {
                    x = conv.forward(&x, gather, *sites)?;
                    // The mean over no sites (an empty input) is zero, not NaN.
                    pools.push(if *sites == 0 {
                        Tensor::zeros((1, CHANNELS), DType::F32, device)?
                    } else {
                        x.mean_keepdim(0)?
                    });
                }
                pools
            }
            (Features::Dense(convs), _, Some(image)) => {
                let mut x = image.clone();
                let mut pools = Vec::with_capacity(convs.len());
                for conv in convs {
                    x = conv.forward(&x)?.relu()?;
                    pools.push(x.mean_keepdim(3)?.mean_keepdim(2)?.reshape((1, CHANNELS))?);
                }
                pools
            }
            (Features::Handmade, _, _) => Vec::new(),
            _ => candle_core::bail!("the input was prepared for another extractor"),
        };
        let mut parts = pooled;
        parts.push(input.globals.clone());
        self.input_mlp.forward(&Tensor::cat(&parts, 1)?)
    }

    /// Embeddings of `n` encoded schedules (`n × width`), `n × EMBEDDING`.
    pub fn embed_schedules(&self, encoded: &Tensor) -> candle_core::Result<Tensor> {
        self.schedule_mlp.forward(encoded)
    }

    /// Scores of the schedules (`n × EMBEDDING` embeddings) on one input (`1 × EMBEDDING`),
    /// a vector of `n`.
    pub fn score(&self, input: &Tensor, schedules: &Tensor) -> candle_core::Result<Tensor> {
        let n = schedules.dim(0)?;
        let x = Tensor::cat(&[&input.broadcast_as((n, EMBEDDING))?, schedules], 1)?;
        let x = self.head[0].forward(&x)?.relu()?;
        let x = self.head[1].forward(&x)?.relu()?;
        self.head[2].forward(&x)?.reshape(n)
    }

    /// The head's layers as plain matrices, for scoring in the nearest-neighbour search
    /// without the tensor machinery.
    pub fn head_weights(&self) -> candle_core::Result<Vec<DenseLayer>> {
        self.head
            .iter()
            .map(|l| {
                let w = l.weight();
                Ok(DenseLayer {
                    inputs: w.dim(1)?,
                    weights: w.flatten_all()?.to_vec1::<f32>()?,
                    bias: l
                        .bias()
                        .expect("linear layers have biases")
                        .to_vec1::<f32>()?,
                })
            })
            .collect()
    }
}
