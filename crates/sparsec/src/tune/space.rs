//! The search space: a SuperSchedule template derived from the statement itself.
//!
//! A [`Point`] fixes, for every *tuned* tensor (a sparse operand or a sparse output: one
//! whose declared format is not all dense), its level formats and level order, or a
//! blocked layout; one split per index variable (a power of two, 1 meaning none); the loop
//! order; the parallel loop with its OpenMP schedule kind and chunk; and the thread count.
//!
//! Points are valid by construction because the library's own checks decide: a format is
//! whatever [`Format::parse`] accepts, a split, an order and a parallel loop whatever the
//! scheduler's preconditions accept, and a point whatever lowering accepts. Nothing here
//! knows which kernel it tunes, so SpMV, SpMM, SDDMM, MTTKRP, SpGEMM, sparse addition and
//! TTV share one template.

use rand::seq::SliceRandom;
use rand::Rng;

use crate::format::Format;
use crate::kernel::{lower_with_default_gpu_parallelism, lower_with_default_parallelism, Backend};
use crate::lower::Lowered;
use crate::notation::cin::{Statement, TensorId, VarId};
use crate::schedule::{Concrete, OmpSchedule, Schedule};

/// Level letters a tuned tensor's levels are drawn from, with their weights: dense,
/// compressed, compressed non-unique (a COO top level), singleton and hashed.
const LEVEL_LETTERS: [(char, u32); 5] = [('d', 3), ('s', 5), ('u', 1), ('q', 1), ('h', 1)];

/// Block sides of blocked layouts (`bcsr:RxC`).
const BLOCK_SIDES: [usize; 4] = [1, 2, 4, 8];

/// Rows in a slice of sliced ELL (`sell:C`): one, two or four AVX-512 registers of
/// `double`s.
const SLICE_ROWS: [usize; 3] = [8, 16, 32];

/// Largest split factor, as a power of two (WACO's 2^15).
const MAX_SPLIT_LOG2: u32 = 15;

/// Largest OpenMP chunk, as a power of two (WACO's 256).
const MAX_CHUNK_LOG2: u32 = 8;

/// How many stored positions per input nonzero a candidate format may need before it is
/// left out: a dense level over a large dimension would need more memory than the machine
/// has. This is a resource limit, not a validity rule.
const MAX_POSITIONS_PER_NONZERO: usize = 16;

/// Positions any format may use, however few nonzeros the input has.
const MIN_POSITION_ALLOWANCE: usize = 1 << 16;

/// The share of [`Draw::Everything`] draws that keep sparsec's default schedule.
const FORMAT_ONLY_SHARE: f64 = 0.25;

/// How many draws [`Space::sample`] makes before it reports that no point was found.
const MAX_DRAWS: usize = 200;

/// The parallel loop of a point.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParallelLoop {
    /// The loop's variable (a name in the point's loop order).
    pub var: String,
    /// The OpenMP schedule kind.
    pub schedule: OmpSchedule,
    /// The OpenMP chunk (unused by [`OmpSchedule::Balanced`]).
    pub chunk: usize,
}

/// One point of the space: formats and schedule together.
#[derive(Clone, Debug, PartialEq)]
pub struct Point {
    /// Format of each tuned tensor, in the order of [`Space::tuned`].
    pub formats: Vec<Format>,
    /// Split factor of each index variable of the statement (1: not split).
    pub splits: Vec<usize>,
    /// The loop order, outermost first.
    pub order: Vec<String>,
    /// The parallel loop; `None` leaves sparsec's default (the outermost loop on threads
    /// when that is race-free).
    pub parallel: Option<ParallelLoop>,
    /// Threads of parallel loops.
    pub threads: usize,
    /// The schedule text that reproduces this point from its formats (empty: the default
    /// schedule).
    pub schedule: String,
}

impl Point {
    /// A key that identifies the point: equal keys, equal kernels.
    pub fn key(&self) -> String {
        let formats: Vec<String> = self.formats.iter().map(Format::spelling).collect();
        format!(
            "{} | {} | {} threads",
            formats.join(" "),
            self.schedule,
            self.threads
        )
    }
}

/// A point with everything needed to compile it.
pub struct Candidate {
    /// The point.
    pub point: Point,
    /// The statement with the point's formats.
    pub statement: Statement,
    /// The point lowered.
    pub lowered: Lowered,
}

/// Which parts of a point [`Space::sample`] draws.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Draw {
    /// Formats and schedule together.
    Everything,
    /// Formats only, with sparsec's default schedule (the format-only baseline).
    FormatsOnly,
}

/// The SuperSchedule template of one statement.
#[derive(Clone, Debug)]
pub struct Space {
    statement: Statement,
    tuned: Vec<TensorId>,
    max_threads: usize,
    /// Stored entries of each tuned tensor (an estimate for the output).
    nonzeros: Vec<usize>,
    /// Stored positions a candidate format may use, per tuned tensor.
    position_limit: Vec<usize>,
    /// The GPU backend whose device the points run on ([`Space::on_gpu`]); `None` for
    /// the CPU.
    gpu: Option<Backend>,
}

/// Threads per block that GPU points draw from.
const GPU_BLOCK_THREADS: [usize; 5] = [32, 64, 128, 256, 512];

/// Warps per block that GPU points draw from.
const GPU_BLOCK_WARPS: [usize; 5] = [1, 2, 4, 8, 16];

/// Stored entries per thread that GPU position splits draw from (the paper's SpMV: 7).
const GPU_ENTRIES_PER_THREAD: [usize; 5] = [1, 2, 4, 7, 16];

impl Space {
    /// The template of `statement` (with its declared formats and dimensions), on at most
    /// `max_threads` threads; `nonzeros[t]` is the number of stored entries of tensor `t`
    /// (an estimate for the output), which bounds the memory a candidate format may use.
    pub fn new(statement: &Statement, nonzeros: &[usize], max_threads: usize) -> Space {
        let tuned: Vec<TensorId> = (0..statement.tensors.len())
            .filter(|&t| {
                let f = &statement.tensors[t].format;
                !statement.tensors[t].dims.is_empty() && !f.is_all_dense()
            })
            .collect();
        let nonzeros: Vec<usize> = tuned.iter().map(|&t| nonzeros[t]).collect();
        let position_limit = nonzeros
            .iter()
            .map(|n| {
                n.saturating_mul(MAX_POSITIONS_PER_NONZERO)
                    .max(MIN_POSITION_ALLOWANCE)
            })
            .collect();
        Space {
            statement: statement.clone(),
            tuned,
            max_threads: max_threads.max(1),
            nonzeros,
            position_limit,
            gpu: None,
        }
    }

    /// The space of GPU schedules on `backend`'s device (`Backend::OpenCl`,
    /// `Backend::Cuda`): each point maps the outer loops to blocks and threads (a thread
    /// per outer coordinate, a warp per outer coordinate with its lanes over the next
    /// loop, a block per outer coordinate, or a position split of a sparse operand's
    /// entries among threads), with the sizes of blocks drawn; the default
    /// point is sparsec's default GPU mapping. Points run on one host thread.
    pub fn on_gpu(mut self, backend: Backend) -> Space {
        self.gpu = Some(backend);
        self.max_threads = 1;
        self
    }

    /// The tensors whose formats the space chooses (sparse operands and a sparse output).
    pub fn tuned(&self) -> &[TensorId] {
        &self.tuned
    }

    /// The statement as declared.
    pub fn statement(&self) -> &Statement {
        &self.statement
    }

    /// Thread counts the space chooses from: powers of two below the maximum, and it.
    pub fn thread_counts(&self) -> Vec<usize> {
        let mut counts: Vec<usize> = std::iter::successors(Some(1usize), |n| n.checked_mul(2))
            .take_while(|&n| n < self.max_threads)
            .collect();
        counts.push(self.max_threads);
        counts
    }

    /// sparsec's default: the declared formats and the default schedule on all threads.
    pub fn default_point(&self) -> Result<Candidate, crate::Error> {
        let formats = self
            .tuned
            .iter()
            .map(|&t| self.statement.tensors[t].format.clone())
            .collect();
        self.candidate(formats, "", self.max_threads)
    }

    /// The candidate of `formats` (one per tuned tensor), `schedule` text and `threads`:
    /// exactly what `sparsec run -f ... -s SCHEDULE --threads N` compiles.
    pub fn candidate(
        &self,
        formats: Vec<Format>,
        schedule: &str,
        threads: usize,
    ) -> Result<Candidate, crate::Error> {
        let statement = self.with_formats(&formats);
        let concrete = Concrete::new(&statement).map_err(crate::Error::from)?;
        let scheduled = Schedule::parse(schedule)
            .map_err(crate::Error::from)?
            .apply(&concrete)
            .map_err(crate::Error::from)?;
        let lowered = match self.gpu {
            Some(backend) if schedule.is_empty() => {
                let targets = backend.targets(&crate::jit::Toolchain::default());
                lower_with_default_gpu_parallelism(&scheduled, targets.main().as_ref(), None)?
            }
            Some(_) => crate::lower::lower(&scheduled).map_err(crate::Error::from)?,
            None => lower_with_default_parallelism(&scheduled).map_err(crate::Error::from)?,
        };
        let (splits, order, parallel) = describe(&statement, &scheduled, schedule);
        Ok(Candidate {
            point: Point {
                formats,
                splits,
                order,
                parallel,
                threads,
                schedule: schedule.to_string(),
            },
            statement,
            lowered,
        })
    }

    /// Whether `formats` (one per tuned tensor) keep every tuned tensor's storage within
    /// the space's bound, a multiple of its entries: the points drawn, and any other point
    /// a search measures, are. (The declared formats are the user's, and always measured.)
    pub fn fits(&self, formats: &[Format]) -> bool {
        self.tuned.iter().enumerate().all(|(k, &t)| {
            let dims = &self.statement.tensors[t].dims;
            formats.get(k).is_some_and(|format| {
                // Fibers one entry wide: what the pattern cannot lower (dense levels,
                // segment starts under them); the measurement checks the widths the input
                // has (hash tables, ELL slots) before it converts.
                let singles = vec![1; format.levels().len()];
                format
                    .positions_bound(dims, &singles, self.nonzeros[k])
                    .is_some_and(|bound| bound <= self.position_limit[k] as u128)
            })
        })
    }

    /// The declared statement with `formats` on the tuned tensors.
    pub fn with_formats(&self, formats: &[Format]) -> Statement {
        let mut statement = self.statement.clone();
        for (&t, f) in self.tuned.iter().zip(formats) {
            statement.tensors[t].format = f.clone();
        }
        statement
    }

    /// Draw a random valid point (`None` when `MAX_DRAWS` draws found none).
    pub fn sample(&self, rng: &mut impl Rng, draw: Draw) -> Option<Candidate> {
        (0..MAX_DRAWS).find_map(|_| self.draw_once(rng, draw))
    }

    fn draw_once(&self, rng: &mut impl Rng, draw: Draw) -> Option<Candidate> {
        let mut formats = Vec::with_capacity(self.tuned.len());
        for &t in &self.tuned {
            formats.push(self.draw_format(rng, self.statement.tensors[t].dims.len())?);
        }
        if !self.fits(&formats) {
            return None;
        }
        let threads = *self.thread_counts().choose(rng).expect("at least one");
        // The format-only points are part of the space; a quarter of the draws keep the
        // default schedule, so that a search of formats and schedules together does not
        // lose the format-only search's best points for want of draws.
        if draw == Draw::FormatsOnly || rng.gen_bool(FORMAT_ONLY_SHARE) {
            return self.candidate(formats, "", threads).ok();
        }
        if self.gpu.is_some() {
            return self.draw_gpu_schedule(rng, formats);
        }
        let statement = self.with_formats(&formats);
        let mut concrete = Concrete::new(&statement).ok()?;
        let mut transforms: Vec<String> = Vec::new();

        // One split per index variable; one the scheduler refuses (a variable a blocked
        // layout already splits) stays unsplit.
        let mut taken: Vec<String> = concrete.vars().iter().map(|v| v.name.clone()).collect();
        for var in &statement.vars {
            if var.size < 4 || rng.gen_bool(0.5) {
                continue;
            }
            let max_log2 = (usize::BITS - 1 - var.size.leading_zeros()).min(MAX_SPLIT_LOG2);
            let factor = 1usize << rng.gen_range(1..max_log2);
            let outer = fresh_name(&format!("{}0", var.name), &taken);
            taken.push(outer.clone());
            let inner = fresh_name(&format!("{}1", var.name), &taken);
            taken.push(inner.clone());
            let text = format!("split({},{outer},{inner},{factor})", var.name);
            if let Ok(next) = apply_text(&concrete, &text) {
                concrete = next;
                transforms.push(text);
            }
        }

        // The loop order: a random walk of swaps of adjacent loops from the default order
        // (which follows the operands' storage), each kept when the scheduler accepts it.
        let default_order: Vec<String> = concrete.loops().iter().map(|s| s.to_string()).collect();
        let n = default_order.len();
        for _ in 0..rng.gen_range(0..=2 * n) {
            let loops: Vec<String> = concrete.loops().iter().map(|s| s.to_string()).collect();
            if loops.len() < 2 {
                break;
            }
            let a = rng.gen_range(0..loops.len() - 1);
            let text = format!("reorder({},{})", loops[a], loops[a + 1]);
            if let Ok(next) = apply_text(&concrete, &text) {
                concrete = next;
            }
        }
        let order: Vec<String> = concrete.loops().iter().map(|s| s.to_string()).collect();
        if order != default_order {
            let text = format!("order({})", order.join(","));
            concrete = apply_text(&concrete, &text).ok()?;
            transforms.push(text);
        }

        // The parallel loop: one of the two outermost loops.
        if threads > 1 {
            let var = &order[rng.gen_range(0..order.len().min(2))];
            let kinds = [
                ("static", true),
                ("dynamic", true),
                ("guided", true),
                ("balanced", false),
            ];
            let (kind, chunked) = kinds.choose(rng).expect("kinds");
            let chunk = if *chunked {
                1usize << rng.gen_range(0..=MAX_CHUNK_LOG2)
            } else {
                1
            };
            let text = format!("parallelize({var},CPUThread,NoRaces,{kind},{chunk})");
            apply_text(&concrete, &text).ok()?;
            transforms.push(text);
        }
        let schedule = transforms.join(",");
        let candidate = self.candidate(formats, &schedule, threads).ok()?;
        // The text reproduces the point: the same loops in the same order.
        debug_assert_eq!(candidate.point.order, order);
        Some(candidate)
    }

    /// A GPU mapping of the loops of `formats`' statement, as [`Space::on_gpu`] says;
    /// `None` when the drawn mapping does not apply (its races, or the target refuses it).
    fn draw_gpu_schedule(&self, rng: &mut impl Rng, formats: Vec<Format>) -> Option<Candidate> {
        let statement = self.with_formats(&formats);
        let concrete = Concrete::new(&statement).ok()?;
        let loops: Vec<String> = concrete.loops().iter().map(|s| s.to_string()).collect();
        let outer = loops.first()?;
        let threads = *GPU_BLOCK_THREADS.choose(rng).expect("sizes");
        let warps = *GPU_BLOCK_WARPS.choose(rng).expect("sizes");
        let mut mappings = vec![format!(
            "split({outer},gpu_block,gpu_thread,{threads}),parallelize(gpu_block,GPUBlock,NoRaces),\
             parallelize(gpu_thread,GPUThread,NoRaces)"
        )];
        if let Some(inner) = loops.get(1) {
            mappings.push(format!(
                "split({outer},gpu_block,gpu_warp,{warps}),parallelize(gpu_block,GPUBlock,NoRaces),\
                 parallelize(gpu_warp,GPUWarp,NoRaces),\
                 parallelize({inner},GPUThread,ParallelReduction)"
            ));
            mappings.push(format!(
                "parallelize({outer},GPUBlock,NoRaces),parallelize({inner},GPUThread,\
                 ParallelReduction)"
            ));
        }
        if let Some(access) = self.position_split_access(&concrete, &loops) {
            // Load balance: the stored entries of an operand split evenly among threads
            // (the scheduling paper's A.11), each thread's run of them accumulated in a
            // register and added atomically where a row is shared.
            let per_thread = *GPU_ENTRIES_PER_THREAD.choose(rng).expect("sizes");
            let per_warp = per_thread * 32;
            mappings.push(format!(
                "fuse({},{},gpu_f),pos(gpu_f,gpu_fpos,{access}),\
                 split(gpu_fpos,gpu_block,gpu_fpos1,{}),split(gpu_fpos1,gpu_warp,gpu_fpos2,\
                 {per_warp}),split(gpu_fpos2,gpu_thread,gpu_nz,{per_thread}),\
                 reorder(gpu_block,gpu_warp,gpu_thread,gpu_nz),\
                 parallelize(gpu_block,GPUBlock,IgnoreRaces),\
                 parallelize(gpu_warp,GPUWarp,IgnoreRaces),\
                 parallelize(gpu_thread,GPUThread,Atomics)",
                loops[0],
                loops[1],
                per_warp * warps
            ));
        }
        let mapping = mappings.choose(rng).expect("mappings");
        let candidate = self.candidate(formats, mapping, 1).ok()?;
        let backend = self.gpu.expect("a GPU space");
        let targets = backend.targets(&crate::jit::Toolchain::default());
        // The target refuses what its code cannot do (a sum its threads would race on).
        targets
            .main()
            .listing(&candidate.lowered.function)
            .ok()
            .map(|_| candidate)
    }

    /// The access, as the scheduling language writes it (`A(i,j)`), of a sparse input of
    /// order 2 indexed by the two outermost `loops`, whose entries a position split
    /// divides; `None` when there is none.
    fn position_split_access(&self, concrete: &Concrete, loops: &[String]) -> Option<String> {
        let statement = &concrete.statement;
        let name = |v: VarId| statement.vars[v].name.as_str();
        concrete.accesses.iter().find_map(|(t, vars)| {
            let tensor = &statement.tensors[*t];
            let indexed = vars.len() == 2
                && loops.len() >= 2
                && name(vars[0]) == loops[0]
                && name(vars[1]) == loops[1];
            (*t > 0 && indexed && !tensor.format.is_all_dense())
                .then(|| format!("{}({},{})", tensor.name, loops[0], loops[1]))
        })
    }

    /// A random format of a tensor of `order` modes: a blocked layout (BCSR or sliced ELL)
    /// for a matrix now and then, else a level letter per level and a random mode order,
    /// as [`Format::parse`] accepts them.
    fn draw_format(&self, rng: &mut impl Rng, order: usize) -> Option<Format> {
        if order == 2 && rng.gen_bool(0.1) {
            let r = *BLOCK_SIDES.choose(rng).expect("sides");
            let c = *BLOCK_SIDES.choose(rng).expect("sides");
            return Format::parse(&format!("bcsr:{r}x{c}"), 2).ok();
        }
        if order == 2 && rng.gen_bool(0.1) {
            let rows = *SLICE_ROWS.choose(rng).expect("slices");
            return Format::parse(&format!("sell:{rows}"), 2).ok();
        }
        let letters: String = (0..order)
            .map(|_| {
                LEVEL_LETTERS
                    .choose_weighted(rng, |(_, w)| *w)
                    .expect("weights")
                    .0
            })
            .collect();
        let mut modes: Vec<usize> = (0..order).collect();
        modes.shuffle(rng);
        let modes: Vec<String> = modes.iter().map(|m| m.to_string()).collect();
        Format::parse(&format!("{letters}:{}", modes.join(",")), order).ok()
    }
}

/// Apply one transformation written as text.
fn apply_text(concrete: &Concrete, text: &str) -> Result<Concrete, crate::Error> {
    Ok(Schedule::parse(text)?.apply(concrete)?)
}

/// `base`, or `base` with a number appended, whichever no name in `taken` is.
fn fresh_name(base: &str, taken: &[String]) -> String {
    std::iter::once(base.to_string())
        .chain((2..).map(|k| format!("{base}_{k}")))
        .find(|n| !taken.iter().any(|t| t == n))
        .expect("an unbounded sequence")
}

/// The splits, loop order and parallel loop of a scheduled statement, read back from it.
fn describe(
    statement: &Statement,
    scheduled: &Concrete,
    schedule: &str,
) -> (Vec<usize>, Vec<String>, Option<ParallelLoop>) {
    let parsed = Schedule::parse(schedule).expect("parsed before");
    let mut splits = vec![1; statement.vars.len()];
    let mut parallel = None;
    for t in &parsed.transforms {
        match t {
            crate::schedule::Transform::Split {
                var,
                by: crate::schedule::SplitBy::Factor(f),
                ..
            } => {
                if let Some(v) = statement.vars.iter().position(|x| &x.name == var) {
                    splits[v] = *f;
                }
            }
            crate::schedule::Transform::Parallelize {
                var,
                schedule,
                chunk,
                ..
            } => {
                parallel = Some(ParallelLoop {
                    var: var.clone(),
                    schedule: *schedule,
                    chunk: *chunk,
                })
            }
            _ => {}
        }
    }
    let order = scheduled.loops().iter().map(|s| s.to_string()).collect();
    (splits, order, parallel)
}
