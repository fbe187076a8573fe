//! Operator graphs: built from slices (the columns of `alpa_graph_add_ops`), read from JSON, or
//! built from the model zoo; queried op by op through borrowed iterators.
use crate::error::{check, Error, ErrorKind, Result};
use crate::problem::FinalizeError;
use crate::util::{buffer_string, cstring, fill, len_i64, static_str, string_from};
use alpa_sys as sys;
use std::ffi::CString;
use std::os::raw::c_char;
use std::path::Path;
use std::ptr;

/// A batch of ops as the columns of `alpa_graph_add_ops` (docs/graph-format.md). `kinds` sets
/// the count; every other per-op column is empty (meaning the default) or has one entry per op;
/// every `*_offsets` column is empty (every range empty) or has count + 1 non-decreasing
/// entries, and its data column holds at least the last offset's entries.
///
/// Defaults: `dtypes` -1 (inferred), `roles` activation, `phases` forward, `layers` 0,
/// `values` 0.0, `names` none.
#[derive(Clone, Debug, Default)]
pub struct OpColumns<'a> {
    /// `ALPA_OP_*` per op.
    pub kinds: &'a [i32],
    /// `ALPA_DTYPE_*` per op, or -1 to infer.
    pub dtypes: &'a [i32],
    /// `ALPA_ROLE_*` per op.
    pub roles: &'a [i32],
    /// `ALPA_PHASE_*` per op.
    pub phases: &'a [i32],
    /// Pipeline layer per op (-1: none).
    pub layers: &'a [i32],
    /// Ranges into `operands` (count + 1 entries).
    pub operand_offsets: &'a [i64],
    /// Operand op ids.
    pub operands: &'a [i32],
    /// Ranges into `shape_dims`.
    pub shape_offsets: &'a [i64],
    /// Result shapes (given for parameter, constant, iota, broadcast_in_dim, reshape).
    pub shape_dims: &'a [i64],
    /// Ranges into `attrs`.
    pub attr_offsets: &'a [i64],
    /// Attribute words, laid out as documented at each `ALPA_OP_*`.
    pub attrs: &'a [i64],
    /// Constant splat / pad fill values.
    pub values: &'a [f64],
    /// Names (`None`: unnamed).
    pub names: &'a [Option<&'a str>],
}

fn invalid(message: String) -> Error {
    Error::new(ErrorKind::InvalidArgument, message)
}

fn column<T>(v: &[T], count: usize, what: &str) -> Result<*const T> {
    if v.is_empty() {
        Ok(ptr::null())
    } else if v.len() == count {
        Ok(v.as_ptr())
    } else {
        Err(invalid(format!("add_ops: {} has {} entries for {} ops", what, v.len(), count)))
    }
}

fn ranges<T>(offsets: &[i64], data: &[T], count: usize, what: &str) -> Result<(*const i64, *const T)> {
    if offsets.is_empty() {
        return Ok((ptr::null(), if data.is_empty() { ptr::null() } else { data.as_ptr() }));
    }
    if offsets.len() != count + 1 {
        return Err(invalid(format!(
            "add_ops: {}_offsets has {} entries, expected {}",
            what,
            offsets.len(),
            count + 1
        )));
    }
    let mut prev = 0i64;
    for (i, &o) in offsets.iter().enumerate() {
        if o < prev {
            return Err(invalid(format!(
                "add_ops: {}_offsets[{}] = {} is negative or decreasing",
                what, i, o
            )));
        }
        prev = o;
    }
    if prev as u64 > data.len() as u64 {
        return Err(invalid(format!(
            "add_ops: {}_offsets end at {} but {} has {} entries",
            what,
            prev,
            what,
            data.len()
        )));
    }
    Ok((offsets.as_ptr(), data.as_ptr()))
}

/// A graph being built. [`finalize`](GraphBuilder::finalize) validates it into a [`Graph`].
pub struct GraphBuilder {
    ptr: *mut sys::alpa_graph,
}

// SAFETY: docs/threading.md: "Graphs follow the same rule (build, `alpa_graph_finalize`, then
// share)", the rule being "A problem being built (`add_*`, `set_*`) needs exclusive access".
// Every builder call takes `&mut self` or `self`; moving the handle between threads is fine
// ("Handles are not internally locked": no thread affinity). Not Sync.
unsafe impl Send for GraphBuilder {}

impl Drop for GraphBuilder {
    fn drop(&mut self) {
        // SAFETY: owned handle, freed once.
        unsafe { sys::alpa_graph_destroy(self.ptr) }
    }
}

impl GraphBuilder {
    /// An empty graph.
    pub fn new() -> Result<GraphBuilder> {
        let mut out = ptr::null_mut();
        // SAFETY: valid out-parameters.
        check(|err| unsafe { sys::alpa_graph_create(&mut out, err) })?;
        Ok(GraphBuilder { ptr: out })
    }

    /// Appends a batch of ops (ids continue from [`op_count`](GraphBuilder::op_count)). All or
    /// nothing: an `Err(InvalidGraph)` names the first bad op and adds none.
    pub fn add_ops(&mut self, ops: &OpColumns<'_>) -> Result<()> {
        let n = ops.kinds.len();
        let dtypes = column(ops.dtypes, n, "dtypes")?;
        let roles = column(ops.roles, n, "roles")?;
        let phases = column(ops.phases, n, "phases")?;
        let layers = column(ops.layers, n, "layers")?;
        let values = column(ops.values, n, "values")?;
        let (operand_offsets, operands) = ranges(ops.operand_offsets, ops.operands, n, "operand")?;
        let (shape_offsets, shape_dims) = ranges(ops.shape_offsets, ops.shape_dims, n, "shape")?;
        let (attr_offsets, attrs) = ranges(ops.attr_offsets, ops.attrs, n, "attr")?;
        column(ops.names, n, "names")?;
        let names: Vec<Option<CString>> = ops
            .names
            .iter()
            .map(|s| s.map(|s| cstring(s, "op name")).transpose())
            .collect::<Result<_>>()?;
        let name_ptrs: Vec<*const c_char> =
            names.iter().map(|s| s.as_ref().map_or(ptr::null(), |c| c.as_ptr())).collect();
        let names_ptr = if name_ptrs.is_empty() { ptr::null() } else { name_ptrs.as_ptr() };
        // SAFETY: every column has `n` entries or is NULL, every offsets column n + 1 entries
        // ending within its data (checked above); the library copies all of it.
        check(|err| unsafe {
            sys::alpa_graph_add_ops(
                self.ptr,
                len_i64(n),
                ops.kinds.as_ptr(),
                dtypes,
                roles,
                phases,
                layers,
                operand_offsets,
                operands,
                shape_offsets,
                shape_dims,
                attr_offsets,
                attrs,
                values,
                names_ptr,
                err,
            )
        })
    }

    /// Marks `op` (an update result) as the new value of parameter op `parameter` (`None`
    /// removes the mark).
    pub fn set_alias(&mut self, op: i32, parameter: Option<i32>) -> Result<()> {
        // SAFETY: exclusive access.
        check(|err| unsafe { sys::alpa_graph_set_alias(self.ptr, op, parameter.unwrap_or(-1), err) })
    }

    /// Marks `op` (`stop` true) so that autodiff (`make_training`) treats its result as a
    /// constant, as JAX's `lax.stop_gradient` (the zoo marks a softmax's row maximum), or clears
    /// the mark.
    pub fn set_stop_gradient(&mut self, op: i32, stop: bool) -> Result<()> {
        // SAFETY: exclusive access.
        check(|err| unsafe {
            sys::alpa_graph_set_stop_gradient(self.ptr, op, i32::from(stop), err)
        })
    }

    /// The graph's outputs (loss first by convention).
    pub fn set_outputs(&mut self, ids: &[i32]) -> Result<()> {
        // SAFETY: ids[count], copied.
        check(|err| unsafe {
            sys::alpa_graph_set_outputs(self.ptr, len_i64(ids.len()), ids.as_ptr(), err)
        })
    }

    /// Ops added so far.
    pub fn op_count(&self) -> i64 {
        // SAFETY: getter.
        unsafe { sys::alpa_graph_op_count(self.ptr) }
    }

    /// Validates and freezes the graph; on failure the error names the op and the builder comes
    /// back unchanged.
    pub fn finalize(self) -> std::result::Result<Graph, FinalizeError<GraphBuilder>> {
        // SAFETY: live handle, exclusive.
        match check(|err| unsafe { sys::alpa_graph_finalize(self.ptr, err) }) {
            Ok(()) => {
                let ptr = self.ptr;
                std::mem::forget(self);
                Ok(Graph { ptr })
            }
            Err(error) => Err(FinalizeError { error, builder: self }),
        }
    }
}

/// A finalized, immutable operator graph.
pub struct Graph {
    ptr: *mut sys::alpa_graph,
}

// SAFETY: docs/threading.md: "Graphs follow the same rule (build, `alpa_graph_finalize`, then
// share)" and "`alpa_graph_auto_shard` only reads its graph, mesh, cluster and options, so
// several threads may auto-shard the same finalized graph at once". A `Graph` is always
// finalized and offers no mutation.
unsafe impl Send for Graph {}
// SAFETY: the same sentences ("build, `alpa_graph_finalize`, then share").
unsafe impl Sync for Graph {}

impl Drop for Graph {
    fn drop(&mut self) {
        // SAFETY: owned handle, freed once.
        unsafe { sys::alpa_graph_destroy(self.ptr) }
    }
}

impl Graph {
    pub(crate) fn from_raw(ptr: *mut sys::alpa_graph) -> Graph {
        Graph { ptr }
    }

    pub(crate) fn as_ptr(&self) -> *const sys::alpa_graph {
        self.ptr
    }

    /// The training graph of a model-zoo spec ("gpt-2.6b", "mlp:layers=6,hidden=32",
    /// "gpt-350m:batch=8,layers=2"); a bad spec is `Err(InvalidArgument)` naming the key.
    pub fn from_model(spec: &str) -> Result<Graph> {
        let c = cstring(spec, "model spec")?;
        let mut out = ptr::null_mut();
        // SAFETY: NUL-terminated spec.
        check(|err| unsafe { sys::alpa_model_build_graph(&mut out, c.as_ptr(), err) })?;
        Ok(Graph { ptr: out })
    }

    /// Reads a graph JSON file (docs/graph-format.md; gzip accepted).
    pub fn read_file<P: AsRef<Path>>(path: P) -> Result<Graph> {
        let c = cstring(&path.as_ref().to_string_lossy(), "path")?;
        let mut out = ptr::null_mut();
        // SAFETY: NUL-terminated path.
        check(|err| unsafe { sys::alpa_graph_read_file(&mut out, c.as_ptr(), err) })?;
        Ok(Graph { ptr: out })
    }

    /// Reads a graph from JSON bytes.
    pub fn from_bytes(data: &[u8]) -> Result<Graph> {
        let mut out = ptr::null_mut();
        // SAFETY: data[size].
        check(|err| unsafe {
            sys::alpa_graph_read_buffer(&mut out, data.as_ptr() as *const c_char, data.len(), err)
        })?;
        Ok(Graph { ptr: out })
    }

    /// The graph as JSON (reading it back gives the same graph).
    pub fn to_json(&self) -> Result<String> {
        // SAFETY: live handle.
        buffer_string(|out, err| unsafe { sys::alpa_graph_to_json(out, self.ptr, err) })
    }

    /// Statistics as JSON (ops, layers, parameters, flops, bytes by role, ...). Experimental.
    pub fn stats_json(&self) -> Result<String> {
        // SAFETY: live handle.
        buffer_string(|out, err| unsafe { sys::alpa_graph_stats_to_json(out, self.ptr, err) })
    }

    /// Number of ops.
    pub fn op_count(&self) -> usize {
        // SAFETY: getter.
        unsafe { sys::alpa_graph_op_count(self.ptr) as usize }
    }

    /// One op, or `None` out of range.
    pub fn op(&self, id: usize) -> Option<Op<'_>> {
        if id < self.op_count() {
            Some(Op { graph: self, id: id as i32 })
        } else {
            None
        }
    }

    /// The ops in id order, borrowed from the graph.
    pub fn ops(&self) -> Ops<'_> {
        Ops { graph: self, next: 0, end: self.op_count() }
    }

    /// The graph's outputs.
    pub fn outputs(&self) -> Vec<i32> {
        // SAFETY: count-then-fill.
        fill("alpa_graph_outputs", |out, cap| unsafe { sys::alpa_graph_outputs(self.ptr, out, cap) })
            .unwrap_or_default()
    }
}

/// A borrowed view of one op of a [`Graph`].
#[derive(Clone, Copy)]
pub struct Op<'a> {
    graph: &'a Graph,
    id: i32,
}

impl<'a> Op<'a> {
    /// The op id.
    pub fn id(&self) -> i32 {
        self.id
    }
    /// `ALPA_OP_*`.
    pub fn kind(&self) -> i32 {
        // SAFETY: getter (id in range).
        unsafe { sys::alpa_graph_op_kind(self.graph.ptr, self.id) }
    }
    /// `ALPA_DTYPE_*`.
    pub fn dtype(&self) -> i32 {
        // SAFETY: getter.
        unsafe { sys::alpa_graph_op_dtype(self.graph.ptr, self.id) }
    }
    /// `ALPA_ROLE_*`.
    pub fn role(&self) -> i32 {
        // SAFETY: getter.
        unsafe { sys::alpa_graph_op_role(self.graph.ptr, self.id) }
    }
    /// `ALPA_PHASE_*`.
    pub fn phase(&self) -> i32 {
        // SAFETY: getter.
        unsafe { sys::alpa_graph_op_phase(self.graph.ptr, self.id) }
    }
    /// The pipeline layer, if any.
    pub fn layer(&self) -> Option<i32> {
        // SAFETY: getter.
        let l = unsafe { sys::alpa_graph_op_layer(self.graph.ptr, self.id) };
        if l < 0 {
            None
        } else {
            Some(l)
        }
    }
    /// The parameter op this op's result replaces after the step.
    pub fn alias_of(&self) -> Option<i32> {
        // SAFETY: getter.
        let a = unsafe { sys::alpa_graph_op_alias(self.graph.ptr, self.id) };
        if a < 0 {
            None
        } else {
            Some(a)
        }
    }
    /// Whether autodiff treats the result as a constant (`Graph::set_stop_gradient`).
    pub fn stop_gradient(&self) -> bool {
        // SAFETY: getter.
        unsafe { sys::alpa_graph_op_stop_gradient(self.graph.ptr, self.id) == 1 }
    }
    /// The constant / pad value (0.0 for other kinds).
    pub fn value(&self) -> f64 {
        // SAFETY: getter.
        unsafe { sys::alpa_graph_op_value(self.graph.ptr, self.id) }
    }
    /// The name ("" if none).
    pub fn name(&self) -> String {
        // SAFETY: valid while the (immutable) graph lives; copied.
        unsafe { string_from(sys::alpa_graph_op_name(self.graph.ptr, self.id)) }
    }
    /// The result shape.
    pub fn shape(&self) -> Vec<i64> {
        // SAFETY: count-then-fill.
        fill("alpa_graph_op_shape", |out, cap| unsafe {
            sys::alpa_graph_op_shape(self.graph.ptr, self.id, out, cap)
        })
        .unwrap_or_default()
    }
    /// Operand op ids.
    pub fn operands(&self) -> Vec<i32> {
        // SAFETY: count-then-fill.
        fill("alpa_graph_op_operands", |out, cap| unsafe {
            sys::alpa_graph_op_operands(self.graph.ptr, self.id, out, cap)
        })
        .unwrap_or_default()
    }
    /// Attribute words (the layout of `alpa_graph_add_ops`).
    pub fn attrs(&self) -> Vec<i64> {
        // SAFETY: count-then-fill.
        fill("alpa_graph_op_attrs", |out, cap| unsafe {
            sys::alpa_graph_op_attrs(self.graph.ptr, self.id, out, cap)
        })
        .unwrap_or_default()
    }
}

impl std::fmt::Debug for Op<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Op")
            .field("id", &self.id)
            .field("kind", &self.kind())
            .field("name", &self.name())
            .field("shape", &self.shape())
            .finish()
    }
}

/// Iterator over the ops of a [`Graph`].
pub struct Ops<'a> {
    graph: &'a Graph,
    next: usize,
    end: usize,
}

impl<'a> Iterator for Ops<'a> {
    type Item = Op<'a>;
    fn next(&mut self) -> Option<Op<'a>> {
        if self.next >= self.end {
            return None;
        }
        let op = Op { graph: self.graph, id: self.next as i32 };
        self.next += 1;
        Some(op)
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.end - self.next;
        (n, Some(n))
    }
}

impl ExactSizeIterator for Ops<'_> {}

/// One preset of the model zoo (experimental catalog).
#[derive(Clone, Debug, PartialEq)]
pub struct ModelPreset {
    /// "gpt-39b".
    pub name: &'static str,
    /// "gpt".
    pub family: &'static str,
    /// The parameter count the name claims.
    pub nominal_params: i64,
    /// The GPU count the Alpa benchmark pairs it with (0: none).
    pub benchmark_gpus: i32,
}

/// The model zoo's presets (experimental).
pub fn model_presets() -> Vec<ModelPreset> {
    // SAFETY: catalog getters return static storage.
    unsafe {
        (0..sys::alpa_model_count())
            .map(|i| ModelPreset {
                name: static_str(sys::alpa_model_name(i)),
                family: static_str(sys::alpa_model_family(i)),
                nominal_params: sys::alpa_model_nominal_params(i),
                benchmark_gpus: sys::alpa_model_benchmark_gpus(i),
            })
            .collect()
    }
}

/// The model zoo (presets with specs and descriptions, family keys) as JSON (experimental).
pub fn model_zoo_json() -> Result<String> {
    // SAFETY: plain out-parameters.
    buffer_string(|out, err| unsafe { sys::alpa_model_zoo_to_json(out, err) })
}

impl std::fmt::Debug for GraphBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GraphBuilder").field("ops", &self.op_count()).finish()
    }
}

impl std::fmt::Debug for Graph {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Graph").field("ops", &self.op_count()).field("outputs", &self.outputs()).finish()
    }
}
