//! Running an outlined function on an OpenCL device (the `opencl` feature): the driver
//! builds the program, the host part runs in [`super::host`], and each launch sets its
//! kernel's arguments, sizes its work-groups and copies what it needs.
//!
//! Buffers know where they are current. An array is copied to the device the first time a
//! kernel reads it in a call, and back only when the host part reads it or the call ends
//! (the output's arrays); an array no kernel wrote is never copied back. Scratch a kernel
//! allocates is the launcher's: local memory sized per launch, private slices in one
//! zeroed global buffer.

use std::ptr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use opencl3::command_queue::CommandQueue;
use opencl3::context::Context;
use opencl3::device::{Device, CL_DEVICE_TYPE_ALL, CL_DEVICE_TYPE_GPU};
use opencl3::kernel::Kernel;
use opencl3::memory::{Buffer, ClMem, CL_MEM_READ_WRITE};
use opencl3::platform::get_platforms;
use opencl3::program::Program as ClProgram;
use opencl3::types::{cl_mem, CL_BLOCKING};

use super::resident::{count_copy, Held, Residency};
use super::NAME;
use crate::codegen::gpu::host::{Host, Memory, Scalar, Stored};
use crate::codegen::gpu::{dim_index, EmitRoom, KernelArg, KernelPlan, Program};
use crate::codegen::runtime::{sys, RawBuffer};
use crate::ir::outline::{Outlined, WARP_SIZE};
use crate::ir::{ArrayRef, Expr, OutputMode, Signature, Type};
use crate::target::{Artifact, Call, Capabilities, Contents};
use crate::Error;

/// The device kernels run on, chosen once: the first GPU of any platform, else the first
/// device of any kind (PoCL's CPU device).
pub struct ClDevice {
    context: Context,
    queue: CommandQueue,
    name: String,
    /// Input arrays kept between calls.
    resident: Residency,
    max_group: usize,
    max_items: Vec<usize>,
}

fn error(what: &str, e: impl std::fmt::Display) -> String {
    format!("OpenCL: {what}: {e}")
}

/// The device, or why there is none.
pub fn device() -> Result<&'static ClDevice, String> {
    static DEVICE: OnceLock<Result<ClDevice, String>> = OnceLock::new();
    DEVICE.get_or_init(open).as_ref().map_err(Clone::clone)
}

fn open() -> Result<ClDevice, String> {
    let platforms = get_platforms().map_err(|e| {
        error(
            "no OpenCL runtime could be loaded (install an ICD loader and a driver, e.g. \
             ocl-icd-libopencl1 and pocl-opencl-icd)",
            e,
        )
    })?;
    let mut found = None;
    for kind in [CL_DEVICE_TYPE_GPU, CL_DEVICE_TYPE_ALL] {
        found = platforms
            .iter()
            .find_map(|p| p.get_devices(kind).ok().and_then(|d| d.first().copied()));
        if found.is_some() {
            break;
        }
    }
    let id = found.ok_or_else(|| "OpenCL: no platform has a device".to_string())?;
    let device = Device::new(id);
    let context = Context::from_device(&device).map_err(|e| error("cannot create a context", e))?;
    #[allow(deprecated)]
    let queue = CommandQueue::create_default(&context, 0)
        .map_err(|e| error("cannot create a command queue", e))?;
    // A quarter of the device's memory, at most 4 GiB, for inputs kept between calls.
    let memory = device
        .global_mem_size()
        .map_err(|e| error("device query", e))?;
    let budget = usize::try_from(memory / 4)
        .unwrap_or(usize::MAX)
        .min(4 << 30);
    Ok(ClDevice {
        resident: Residency::new(budget),
        name: device.name().unwrap_or_else(|_| "an OpenCL device".into()),
        max_group: device
            .max_work_group_size()
            .map_err(|e| error("device query", e))?,
        max_items: device
            .max_work_item_sizes()
            .map_err(|e| error("device query", e))?,
        context,
        queue,
    })
}

impl ClDevice {
    /// The device's name.
    pub fn name(&self) -> &str {
        &self.name
    }
}

/// A built program and what its launches need.
pub struct ClCode {
    device: &'static ClDevice,
    outlined: Outlined,
    signature: Signature,
    plans: Vec<KernelPlan>,
    /// Setting arguments and launching are one step per kernel object.
    kernels: Mutex<Vec<Kernel>>,
    /// The entries an emitting kernel's launch has room for: the most one has emitted,
    /// so that a kernel called again on similar inputs launches once.
    emit_room: AtomicUsize,
    _program: ClProgram,
    capabilities: Capabilities,
}

/// Build `program` (printed from `outlined`) for the device.
pub fn build(
    outlined: Outlined,
    signature: Signature,
    program: &Program,
    capabilities: Capabilities,
) -> Result<ClCode, Error> {
    let fail = |reason: String| Error::Input(format!("the {NAME} target: {reason}"));
    let device = device().map_err(fail)?;
    let built = ClProgram::create_and_build_from_source(
        &device.context,
        &program.source,
        "-cl-std=CL1.2 -Werror",
    )
    .map_err(|log| fail(format!("the driver refused the kernel:\n{log}")))?;
    let kernels = program
        .kernels
        .iter()
        .map(|p| Kernel::create(&built, &p.name).map_err(|e| fail(error("kernel", e))))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(ClCode {
        device,
        outlined,
        signature,
        plans: program.kernels.clone(),
        kernels: Mutex::new(kernels),
        emit_room: AtomicUsize::new(0),
        _program: built,
        capabilities,
    })
}

impl Artifact for ClCode {
    fn target(&self) -> &'static str {
        NAME
    }

    fn was_compiled(&self) -> bool {
        true
    }

    fn capabilities(&self) -> Capabilities {
        self.capabilities
    }

    unsafe fn call(&self, call: Call<'_>) -> Result<i32, Error> {
        let host = &self.outlined.host;
        let mut evaluator = Host::new(host, &self.signature, call.params);
        let mut memory = Buffers {
            code: self,
            entries: Vec::new(),
            call: &call,
        };
        let ran = memory
            .allocate_scratch(&evaluator)
            .and_then(|()| evaluator.run(&host.body, &mut memory))
            .and_then(|()| memory.finish());
        ran.map(|()| 0).map_err(|reason| {
            Error::Input(format!(
                "the {NAME} target on {}: {reason}",
                self.device.name
            ))
        })
    }
}

/// Where one array of a call is current.
struct Entry {
    array: ArrayRef,
    /// Host storage: the caller's, or scratch the call allocated.
    host: *mut u8,
    bytes: usize,
    /// Scratch the host part allocated (kept alive here).
    owned: Option<Vec<u8>>,
    /// What it holds on entry: a name across calls, where its bytes stay the same.
    contents: Contents,
    device: Option<DeviceCopy>,
    host_current: bool,
    device_current: bool,
}

/// An array's copy on the device: the call's own, or one kept between calls (read only).
enum DeviceCopy {
    Own(Buffer<u8>),
    Kept(Arc<Held>),
}

impl DeviceCopy {
    fn mem(&self) -> cl_mem {
        match self {
            DeviceCopy::Own(buffer) => buffer.get(),
            DeviceCopy::Kept(held) => held.mem(),
        }
    }
}

/// The arrays of one call.
struct Buffers<'c> {
    code: &'c ClCode,
    call: &'c Call<'c>,
    entries: Vec<Entry>,
}

impl Buffers<'_> {
    /// The function's scratch arrays, zeroed on the host.
    fn allocate_scratch(&mut self, host: &Host<'_>) -> Result<(), String> {
        for local in &self.code.outlined.host.locals {
            let len = host.eval(&local.len, self)?;
            let Scalar::Int(len) = len else {
                return Err("a scratch array's length is not an integer".into());
            };
            let array = ArrayRef::Scratch(local.array);
            let stored = Stored::of(&self.code.outlined.host, &self.code.signature, &array);
            let bytes = usize::try_from(len)
                .ok()
                .and_then(|n| n.checked_mul(stored.size()))
                .ok_or("a scratch array's length is out of range")?;
            let mut owned = Vec::new();
            owned
                .try_reserve_exact(bytes)
                .map_err(|_| format!("cannot allocate {bytes} bytes of scratch"))?;
            owned.resize(bytes, 0);
            self.entries.push(Entry {
                array,
                host: owned.as_mut_ptr(),
                bytes,
                owned: Some(owned),
                contents: Contents::Unnamed,
                device: None,
                host_current: true,
                device_current: false,
            });
        }
        Ok(())
    }

    fn entry(&mut self, array: &ArrayRef) -> Result<usize, String> {
        if let Some(n) = self.entries.iter().position(|e| e.array == *array) {
            return Ok(n);
        }
        let slot = self
            .code
            .signature
            .arrays
            .iter()
            .position(|a| a == array)
            .ok_or_else(|| format!("the call has no array {array:?}"))?;
        self.entries.push(Entry {
            array: *array,
            host: self.call.arrays[slot].cast(),
            bytes: self.call.bytes[slot],
            owned: None,
            contents: self.call.contents[slot],
            device: None,
            host_current: true,
            device_current: false,
        });
        Ok(self.entries.len() - 1)
    }

    /// The device copy of `array`, current: one kept from an earlier call where its
    /// contents have a name, else copied now (and kept, where they have a name).
    fn on_device(&mut self, array: &ArrayRef) -> Result<cl_mem, String> {
        let n = self.entry(array)?;
        let device = self.code.device;
        let e = &mut self.entries[n];
        if e.device.is_none() {
            let named = match e.contents {
                Contents::Named(key) => device.resident.find(&key),
                _ => None,
            };
            if let Some(held) = named {
                e.device = Some(DeviceCopy::Kept(held));
                e.device_current = true;
            }
        }
        if !e.device_current && matches!(e.device, Some(DeviceCopy::Kept(_))) {
            // Kept copies are of inputs, which no call writes; should the host write one,
            // the call copies it anew and keeps nothing.
            e.device = None;
            e.contents = Contents::Unnamed;
        }
        if e.device.is_none() {
            e.device = Some(DeviceCopy::Own(uninitialised(device, e.bytes)?));
        }
        // Room the kernel only writes has nothing to copy yet.
        if !e.device_current && e.bytes > 0 && e.contents != Contents::Unwritten {
            let Some(DeviceCopy::Own(buffer)) = e.device.as_mut() else {
                unreachable!("a kept copy is current")
            };
            // SAFETY: `host` holds `bytes` bytes while the call lasts.
            let data = unsafe { std::slice::from_raw_parts(e.host, e.bytes) };
            // SAFETY: a blocking write of `bytes` bytes into a buffer of at least as many.
            unsafe {
                device
                    .queue
                    .enqueue_write_buffer(buffer, CL_BLOCKING, 0, data, &[])
            }
            .map_err(|err| error("copy to the device", err))?;
            count_copy(e.bytes);
        }
        e.device_current = true;
        if let (Contents::Named(key), Some(DeviceCopy::Own(_))) = (e.contents, &e.device) {
            let Some(DeviceCopy::Own(buffer)) = e.device.take() else {
                unreachable!("matched above")
            };
            let held = Arc::new(Held(buffer));
            device.resident.keep(key, held.clone(), e.bytes);
            e.device = Some(DeviceCopy::Kept(held));
        }
        Ok(e.device.as_ref().expect("a device copy").mem())
    }

    /// Copy `entry` back to the host if the device holds its newest contents.
    fn bring_home(&mut self, n: usize) -> Result<(), String> {
        let device = self.code.device;
        let e = &mut self.entries[n];
        if !e.host_current {
            let Some(DeviceCopy::Own(buffer)) = e.device.as_ref() else {
                unreachable!("only the call's own buffers are written")
            };
            // SAFETY: `host` holds `bytes` bytes, written by nothing else during the call.
            let data = unsafe { std::slice::from_raw_parts_mut(e.host, e.bytes) };
            // SAFETY: a blocking read of `bytes` bytes.
            unsafe {
                device
                    .queue
                    .enqueue_read_buffer(buffer, CL_BLOCKING, 0, data, &[])
            }
            .map_err(|err| error("copy from the device", err))?;
            e.host_current = true;
        }
        Ok(())
    }

    /// The order of the entries the function emits.
    fn order(&self) -> usize {
        match self.code.outlined.host.output {
            OutputMode::Emit { order } => order,
            _ => 0,
        }
    }

    /// Copies, on the device, of `arrays` as they are now.
    fn snapshot(&mut self, arrays: &[ArrayRef]) -> Result<Vec<(ArrayRef, Buffer<u8>)>, String> {
        let mut copies = Vec::new();
        for a in arrays {
            let mem = self.on_device(a)?;
            let n = self.entry(a)?;
            let bytes = self.entries[n].bytes;
            let copy = uninitialised(self.code.device, bytes)?;
            copy_on_device(self.code.device, mem, copy.get(), bytes)?;
            copies.push((*a, copy));
        }
        Ok(copies)
    }

    /// Put back the device copies that [`Self::snapshot`] took.
    fn restore(&mut self, copies: &[(ArrayRef, Buffer<u8>)]) -> Result<(), String> {
        for (a, copy) in copies {
            let mem = self.on_device(a)?;
            let n = self.entry(a)?;
            let bytes = self.entries[n].bytes;
            copy_on_device(self.code.device, copy.get(), mem, bytes)?;
        }
        Ok(())
    }

    /// Bring every array a kernel wrote back to the caller's storage.
    fn finish(&mut self) -> Result<(), String> {
        for n in 0..self.entries.len() {
            if self.entries[n].owned.is_none() {
                self.bring_home(n)?;
            }
        }
        Ok(())
    }

    fn run_kernel(&mut self, k: usize, vars: &mut [Option<Scalar>]) -> Result<(), String> {
        let code = self.code;
        let kernel = &code.outlined.kernels[k];
        let plan = &code.plans[k];
        let host = &code.outlined.host;
        let mut evaluator = Host::new(host, &code.signature, self.call.params);
        evaluator.vars = vars.to_vec();
        let size = |e: &Expr, this: &mut Self| -> Result<usize, String> {
            match evaluator.eval(e, this)? {
                Scalar::Int(v) => Ok(usize::try_from(v.max(0)).unwrap_or(0)),
                Scalar::Float(_) => Err("a launch size is not an integer".into()),
            }
        };
        let (local, groups) = {
            let mut local = [1usize; 3];
            let mut groups = [1usize; 3];
            for d in 0..3 {
                let grid = size(&kernel.geometry.grid[d], self)?;
                let threads = size(&kernel.geometry.threads[d], self)?;
                let warps = size(&kernel.geometry.warps[d], self)?;
                if grid == 0 || threads == 0 || warps == 0 {
                    return Ok(());
                }
                // Loops take their iterations in turns, so sizes may be capped.
                if plan.warp_dim.map(dim_index) == Some(d) {
                    local[d] = WARP_SIZE as usize;
                    groups[d] = grid.min(65_536) * warps.min(64);
                } else {
                    local[d] = threads;
                    groups[d] = grid.min(65_536);
                }
            }
            (local, groups)
        };
        let local = self.fit(local, plan)?;
        let work_items: usize = local.iter().product();
        let group_count: usize = groups.iter().product();
        let emits = plan.args.contains(&KernelArg::Emitted(EmitRoom::Counter));
        let mut room = emits
            .then(|| {
                Room::new(
                    code.device,
                    code.emit_room.load(Ordering::Relaxed),
                    self.order(),
                )
            })
            .transpose()?;
        // What the kernel writes beside its entries, as it was: a kernel whose entries
        // outgrow their room runs again from there.
        let before = if emits {
            self.snapshot(&kernel.written)?
        } else {
            Vec::new()
        };
        let mut kernels = self.code.kernels.lock().expect("kernels");
        let cl_kernel = &mut kernels[k];
        let mut partials: Vec<(crate::ir::Var, Buffer<u8>, Type)> = Vec::new();
        let mut keep: Vec<Buffer<u8>> = Vec::new();
        loop {
            partials.clear();
            keep.clear();
            for (index, arg) in plan.args.iter().enumerate() {
                let index = index as u32;
                // SAFETY: each argument has the type the printed kernel declares at `index`.
                let set = unsafe {
                    match arg {
                        KernelArg::Array(a) => {
                            let mem = self.on_device(a)?;
                            cl_kernel.set_arg(index, &mem)
                        }
                        KernelArg::Param(p) => {
                            let v = evaluator.param(*p).ok_or("a parameter is missing")?;
                            cl_kernel.set_arg(index, &v)
                        }
                        KernelArg::Captured(v) => {
                            let value = vars[v.index()].ok_or("a captured variable is unset")?;
                            // By value, as the kernel declares it: 8 or 4 bytes.
                            let stored = Stored::of_type(host.var(*v).ty);
                            let mut raw = [0u8; 8];
                            stored.write(value, &mut raw[..stored.size()])?;
                            match stored.size() {
                                8 => cl_kernel.set_arg(index, &raw),
                                _ => {
                                    let half: [u8; 4] = raw[..4].try_into().expect("4 bytes");
                                    cl_kernel.set_arg(index, &half)
                                }
                            }
                        }
                        KernelArg::Partial(v) => {
                            let ty = host.var(*v).ty;
                            let buffer =
                                zeroed(code.device, group_count * Stored::of_type(ty).size())?;
                            let mem = buffer.get();
                            partials.push((*v, buffer, ty));
                            cl_kernel.set_arg(index, &mem)
                        }
                        KernelArg::Shared { array, len } => {
                            let stored =
                                Stored::of(host, &code.signature, &ArrayRef::Scratch(*array));
                            let n = size(len, self)?;
                            cl_kernel.set_arg_local_buffer(index, (n * stored.size()).max(1))
                        }
                        KernelArg::Private { array, len } => {
                            let stored =
                                Stored::of(host, &code.signature, &ArrayRef::Scratch(*array));
                            let n = size(len, self)?;
                            let bytes = n
                                .checked_mul(stored.size())
                                .and_then(|b| b.checked_mul(work_items * group_count))
                                .ok_or("private scratch is too large")?;
                            let buffer = zeroed(code.device, bytes)?;
                            let mem = buffer.get();
                            keep.push(buffer);
                            cl_kernel.set_arg(index, &mem)
                        }
                        KernelArg::Combine => cl_kernel.set_arg_local_buffer(index, 8 * work_items),
                        KernelArg::Emitted(part) => {
                            let room = room.as_ref().expect("an emitting kernel has room");
                            match part {
                                EmitRoom::Coords => cl_kernel.set_arg(index, &room.coords.get()),
                                EmitRoom::Values => cl_kernel.set_arg(index, &room.values.get()),
                                EmitRoom::Counter => cl_kernel.set_arg(index, &room.counter.get()),
                                EmitRoom::Capacity => {
                                    cl_kernel.set_arg(index, &(room.capacity as i64))
                                }
                            }
                        }
                        KernelArg::Warps(d) => {
                            let n =
                                size(&kernel.geometry.warps[dim_index(*d)], self)?.min(64) as i64;
                            cl_kernel.set_arg(index, &n)
                        }
                    }
                };
                set.map_err(|e| error(&format!("kernel argument {index}"), e))?;
            }
            let global: Vec<usize> = (0..3).map(|d| groups[d] * local[d]).collect();
            // SAFETY: every argument is set; the sizes are within the device's limits.
            unsafe {
                code.device.queue.enqueue_nd_range_kernel(
                    cl_kernel.get(),
                    3,
                    ptr::null(),
                    global.as_ptr(),
                    local.as_ptr(),
                    &[],
                )
            }
            .map_err(|e| error("launch", e))?;
            code.device
                .queue
                .finish()
                .map_err(|e| error("the kernel failed", e))?;
            if let Some(r) = room.as_mut() {
                let taken = r.taken(code.device)?;
                if taken > r.capacity {
                    // Every entry counted: the next launch has room for all of them.
                    code.emit_room.fetch_max(taken, Ordering::Relaxed);
                    *r = Room::new(code.device, taken, self.order())?;
                    self.restore(&before)?;
                    continue;
                }
            }
            break;
        }
        drop(kernels);
        if let Some(r) = room {
            r.append_to(code.device, self.call.out, self.order())?;
        }
        for a in &kernel.written {
            let n = self.entry(a)?;
            self.entries[n].host_current = false;
        }
        for (v, buffer, ty) in partials {
            let stored = Stored::of_type(ty);
            let mut bytes = vec![0u8; group_count * stored.size()];
            // SAFETY: a blocking read of the buffer's bytes.
            unsafe {
                code.device
                    .queue
                    .enqueue_read_buffer(&buffer, CL_BLOCKING, 0, &mut bytes, &[])
            }
            .map_err(|e| error("copy the partial sums", e))?;
            let mut total = vars[v.index()].unwrap_or(Scalar::Int(0));
            for chunk in bytes.chunks_exact(stored.size()) {
                total = evaluator.reduce(total, stored.read(chunk), self)?;
            }
            vars[v.index()] = Some(total.to_type(ty));
        }
        drop(keep);
        Ok(())
    }

    /// Local sizes within the device's limits: each dimension at most its item limit,
    /// their product at most the group limit (warps keep their lanes).
    fn fit(&self, mut local: [usize; 3], plan: &KernelPlan) -> Result<[usize; 3], String> {
        let device = self.code.device;
        for (d, size) in local.iter_mut().enumerate() {
            *size = (*size)
                .min(device.max_items.get(d).copied().unwrap_or(1))
                .max(1);
        }
        while local.iter().product::<usize>() > device.max_group {
            let d = (0..3)
                .filter(|d| plan.warp_dim.map(dim_index) != Some(*d))
                .max_by_key(|d| local[*d])
                .expect("a dimension");
            if local[d] == 1 {
                return Err("the device's work-groups are smaller than a warp".into());
            }
            local[d] = local[d].div_ceil(2);
        }
        Ok(local)
    }
}

impl Memory for Buffers<'_> {
    fn host(&mut self, array: &ArrayRef, write: bool) -> Result<&mut [u8], String> {
        let n = self.entry(array)?;
        self.bring_home(n)?;
        let e = &mut self.entries[n];
        if write {
            e.device_current = false;
        }
        // SAFETY: `host` holds `bytes` bytes while the call lasts.
        Ok(unsafe { std::slice::from_raw_parts_mut(e.host, e.bytes) })
    }

    fn launch(&mut self, kernel: usize, vars: &mut [Option<Scalar>]) -> Result<(), String> {
        self.run_kernel(kernel, vars)
    }

    fn emit(&mut self, coords: &[i64], value: f64) -> Result<(), String> {
        append_entry(self.call.out, coords, value)
    }
}

/// Append an entry to `out`, the call's first entry buffer (grown only by the runtime).
fn append_entry(out: *mut RawBuffer, coords: &[i64], value: f64) -> Result<(), String> {
    // SAFETY: `out` is the call's entry buffer; `coords` holds its order's coordinates.
    match unsafe { sys::sparsec_append(out, coords.len() as i64, coords.as_ptr(), value) } {
        0 => Err("out of memory growing the output's entries".into()),
        _ => Ok(()),
    }
}

/// Copy `bytes` bytes from `from` to `to`, both on the device, and wait.
fn copy_on_device(device: &ClDevice, from: cl_mem, to: cl_mem, bytes: usize) -> Result<(), String> {
    if bytes == 0 {
        return Ok(());
    }
    // SAFETY: both buffers hold at least `bytes` bytes and do not overlap.
    let event = unsafe {
        opencl3::command_queue::enqueue_copy_buffer(
            device.queue.get(),
            from,
            to,
            0,
            0,
            bytes,
            0,
            ptr::null(),
        )
    }
    .map_err(|e| error("copy on the device", e))?;
    drop(opencl3::event::Event::new(event));
    device
        .queue
        .finish()
        .map_err(|e| error("copy on the device", e))
}

/// The room an emitting kernel's launch writes its entries in ([`EmitRoom`]).
struct Room {
    coords: Buffer<u8>,
    values: Buffer<u8>,
    counter: Buffer<u8>,
    /// The entries there is room for.
    capacity: usize,
}

impl Room {
    /// Room for `capacity` entries (at least 1024) of `order` coordinates, the counter
    /// zeroed.
    fn new(device: &ClDevice, capacity: usize, order: usize) -> Result<Room, String> {
        let capacity = capacity.max(1024);
        let allocate = |elements: Option<usize>| -> Result<Buffer<u8>, String> {
            let bytes = elements
                .and_then(|n| n.checked_mul(8))
                .ok_or("the output's entries are too many to hold")?;
            // The kernel writes the slots it takes.
            uninitialised(device, bytes)
        };
        Ok(Room {
            coords: allocate(capacity.checked_mul(order.max(1)))?,
            values: allocate(Some(capacity))?,
            counter: zeroed(device, 8)?,
            capacity,
        })
    }

    /// The slots the kernel took (its entries, written or not).
    fn taken(&self, device: &ClDevice) -> Result<usize, String> {
        let mut count = [0u8; 8];
        // SAFETY: a blocking read of the counter's 8 bytes.
        unsafe {
            device
                .queue
                .enqueue_read_buffer(&self.counter, CL_BLOCKING, 0, &mut count, &[])
        }
        .map_err(|e| error("read the entries' count", e))?;
        usize::try_from(i64::from_ne_bytes(count))
            .map_err(|_| "the entries' count is negative".into())
    }

    /// Append the entries written (all of them: the caller saw they fit) to `out`.
    fn append_to(
        &self,
        device: &ClDevice,
        out: *mut RawBuffer,
        order: usize,
    ) -> Result<(), String> {
        let entries = self.taken(device)?;
        let read = |buffer: &Buffer<u8>, elements: usize| -> Result<Vec<u8>, String> {
            let mut bytes = vec![0u8; elements * 8];
            // SAFETY: a blocking read of `elements` slots the kernel wrote.
            unsafe {
                device
                    .queue
                    .enqueue_read_buffer(buffer, CL_BLOCKING, 0, &mut bytes, &[])
            }
            .map_err(|e| error("copy the entries from the device", e))?;
            Ok(bytes)
        };
        let coords = read(&self.coords, entries * order)?;
        let values = read(&self.values, entries)?;
        let word = |bytes: &[u8]| <[u8; 8]>::try_from(bytes).expect("8 bytes");
        let mut entry = vec![0i64; order];
        for (n, value) in values.chunks_exact(8).enumerate() {
            for (k, c) in entry.iter_mut().enumerate() {
                let at = (n * order + k) * 8;
                *c = i64::from_ne_bytes(word(&coords[at..at + 8]));
            }
            let value = f64::from_ne_bytes(word(value));
            append_entry(out, &entry, value)?;
        }
        Ok(())
    }
}

/// A device buffer of `bytes` bytes (at least one: OpenCL has no empty buffers), its
/// contents whatever the device left there.
fn uninitialised(device: &ClDevice, bytes: usize) -> Result<Buffer<u8>, String> {
    // SAFETY: a plain allocation.
    unsafe {
        Buffer::<u8>::create(
            &device.context,
            CL_MEM_READ_WRITE,
            bytes.max(1),
            ptr::null_mut(),
        )
    }
    .map_err(|e| error(&format!("cannot allocate {bytes} bytes"), e))
}

fn zeroed(device: &ClDevice, bytes: usize) -> Result<Buffer<u8>, String> {
    let zeros = vec![0u8; bytes.max(1)];
    let mut buffer = uninitialised(device, bytes)?;
    // SAFETY: a blocking write of as many bytes as the buffer holds.
    unsafe {
        device
            .queue
            .enqueue_write_buffer(&mut buffer, CL_BLOCKING, 0, &zeros, &[])
    }
    .map_err(|e| error("zero a buffer", e))?;
    Ok(buffer)
}
