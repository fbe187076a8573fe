# Alpa.jl: the idiomatic Julia layer over libalpa's C ABI (LibAlpa, generated from alpa.h).
#
# NOT RUN: no Julia exists on the machines that build libalpa. bindings/julia/check.py proves
# that every ccall and every call into LibAlpa below agrees with the C headers (names, argument
# counts and types, return types, struct layouts); the Julia semantics are reviewed, not tested.

# libalpa's path is read from ENV["ALPA_LIBRARY"] when the module loads (LibAlpa.libalpa is a
# const); a precompiled cache would freeze the value of the machine that precompiled it.
__precompile__(false)

"""
    Alpa

Automatic parallelization planning for deep learning (libalpa, Alpa re-created) from Julia.

    using Alpa
    sol = solve("tests/golden/iopddl_example.json")     # sol.objective == 445
    p = plan("gpt-2.6b"; cluster = "p3.16xlarge:2")     # a Plan; closed on GC or close(p)
    for s in stages(p) println(s) end

Errors are thrown as [`AlpaError`](@ref) with the library's status and message. The raw C ABI
is the submodule `Alpa.LibAlpa` (every function, constant and struct of alpa.h and
alpa_experimental.h, same names).
"""
module Alpa

include("LibAlpa.jl")
using .LibAlpa

export AlpaError, CancelToken, cancel!, Problem, read_problem, add_nodes!, add_edges!,
    set_memory_limit!, finalize!, evaluate, Solution, solve, Cluster, Plan, Stage, plan, stages,
    iteration_seconds, microbatches, pipeline_schedule, schedule_name, virtual_stages, to_json,
    simulate, timeline_svg

# ---- errors ----------------------------------------------------------------------------------

"""
    AlpaError(status, message)

A failed libalpa call: `status` is the `ALPA_ERR_*` code (`LibAlpa.ALPA_ERR_INFEASIBLE`, ...),
`message` the library's message, which names the offending element.
"""
struct AlpaError <: Exception
    status::Int32
    message::String
end

status_name(status::Integer) = unsafe_string(alpa_status_string(Int32(status)))

Base.showerror(io::IO, e::AlpaError) =
    print(io, "AlpaError(", e.status, " ", status_name(e.status), "): ", e.message)

errref() = Ref{Ptr{alpa_error}}(C_NULL)

# Throws the error of a fallible call (status != ALPA_OK), freeing the C error object.
function throw_on(status::Integer, err::Base.RefValue{Ptr{alpa_error}})
    status == ALPA_OK && return nothing
    e = err[]
    message = status_name(status)
    if e != C_NULL
        message = unsafe_string(alpa_error_message(e))
        alpa_error_free(e)
        err[] = C_NULL
    end
    throw(AlpaError(Int32(status), message))
end

# A count-then-fill getter returned a negative status.
check_count(n::Integer, what::AbstractString) =
    n < 0 ? throw(AlpaError(Int32(-n), what * ": " * status_name(-n))) : Int(n)

# The bytes of an alpa_buffer as a String; frees the buffer.
function take_buffer(buf::Ptr{alpa_buffer})
    try
        data = convert(Ptr{UInt8}, alpa_buffer_data(buf))
        return unsafe_string(data, alpa_buffer_size(buf))
    finally
        alpa_buffer_free(buf)
    end
end

"""The version of the libalpa actually loaded."""
version() = VersionNumber(unsafe_string(alpa_version_string()))

function __init__()
    loaded = alpa_version_number()
    loaded == ALPA_VERSION_NUMBER || @warn "libalpa $(version()) loaded from $(libalpa); " *
                                           "LibAlpa.jl was generated from the headers of $(ALPA_VERSION_NUMBER)"
end

# ---- handles ---------------------------------------------------------------------------------
# Each wrapper owns one C handle, frees it when garbage-collected (finalizer) or at close(x), and
# converts to the C pointer wherever LibAlpa wants one (the wrapper stays rooted for the call).

for (J, C, destroy) in ((:CancelToken, :alpa_cancel_token, :alpa_cancel_token_destroy),
                        (:Problem, :alpa_problem, :alpa_problem_destroy),
                        (:SolveOptions, :alpa_solve_options, :alpa_solve_options_destroy),
                        (:Cluster, :alpa_cluster, :alpa_cluster_destroy),
                        (:PlanOptions, :alpa_plan_options, :alpa_plan_options_destroy),
                        (:Plan, :alpa_plan, :alpa_plan_destroy))
    @eval begin
        mutable struct $J
            ptr::Ptr{$C}
            keep::Vector{Any}  # Julia objects the C side points to (tokens, callbacks)
            function $J(ptr::Ptr{$C})
                ptr == C_NULL && throw(ArgumentError($(string(J)) * ": NULL handle"))
                return finalizer(close, new(ptr, Any[]))
            end
        end
        function Base.close(x::$J)
            p = x.ptr
            x.ptr = C_NULL
            p == C_NULL || $destroy(p)
            empty!(x.keep)
            return nothing
        end
        Base.isopen(x::$J) = x.ptr != C_NULL
        function Base.unsafe_convert(::Type{Ptr{$C}}, x::$J)
            x.ptr == C_NULL && throw(ArgumentError($(string(J)) * " is closed"))
            return x.ptr
        end
    end
end

"""
    CancelToken()

Cancels the solves and plans it is given to (`solve(...; cancel = t)`, `plan(...; cancel = t)`)
when [`cancel!`](@ref) is called, from any thread. A long ccall does not reach a GC safepoint:
the cancelling task should not allocate much while it waits.
"""
function CancelToken()
    out = Ref{Ptr{alpa_cancel_token}}(C_NULL)
    err = errref()
    throw_on(alpa_cancel_token_create(out, err), err)
    return CancelToken(out[])
end

"""Requests cancellation; safe from any thread, any number of times."""
cancel!(t::CancelToken) = (alpa_cancel_token_trigger(t); nothing)

# ---- sharding problems and the solver --------------------------------------------------------

"""
    Problem()

An empty sharding problem: add nodes and edges, then [`finalize!`](@ref) it.
"""
function Problem()
    out = Ref{Ptr{alpa_problem}}(C_NULL)
    err = errref()
    throw_on(alpa_problem_create(out, err), err)
    return Problem(out[])
end

"""
    read_problem(path; format = LibAlpa.ALPA_FORMAT_AUTO) -> Problem

A finalized problem from an IOPDDL or Alpa JSON file (.json or .json.gz).
"""
function read_problem(path::AbstractString; format::Integer = ALPA_FORMAT_AUTO)
    out = Ref{Ptr{alpa_problem}}(C_NULL)
    err = errref()
    throw_on(alpa_problem_read_file(out, String(path), Int32(format), err), err)
    return Problem(out[])
end

"""
    add_nodes!(p, costs; usages = nothing)

Appends one node per element of `costs` (a vector of cost vectors, one cost per strategy);
`usages` likewise gives memory bytes per strategy (default all zero).
"""
function add_nodes!(p::Problem, costs::AbstractVector{<:AbstractVector{<:Real}};
                    usages::Union{Nothing,AbstractVector{<:AbstractVector{<:Integer}}} = nothing)
    counts = Int32[length(c) for c in costs]
    flat = Float64[x for c in costs for x in c]
    use = usages === nothing ? C_NULL : Int64[x for u in usages for x in u]
    usages === nothing || length(use) == length(flat) ||
        throw(ArgumentError("usages must have one entry per strategy, like costs"))
    err = errref()
    throw_on(alpa_problem_add_nodes(p, Int64(length(counts)), counts, flat, use, err), err)
    return p
end

"""
    add_edges!(p, edges, costs)

Appends edges `edges[i] = (u, v)` (0-based node ids) with cost matrices `costs[i]` of size
strategies(u) x strategies(v).
"""
function add_edges!(p::Problem, edges::AbstractVector{<:Tuple{Integer,Integer}},
                    costs::AbstractVector{<:AbstractMatrix{<:Real}})
    length(edges) == length(costs) || throw(ArgumentError("one cost matrix per edge"))
    ends = Int32[x for (u, v) in edges for x in (u, v)]
    flat = Float64[x for m in costs for x in permutedims(m)]  # row-major, as C reads it
    err = errref()
    throw_on(alpa_problem_add_edges(p, Int64(length(edges)), ends, flat, err), err)
    return p
end

"""Sets the memory limit in bytes (`nothing` removes it)."""
function set_memory_limit!(p::Problem, limit::Union{Nothing,Integer})
    err = errref()
    throw_on(alpa_problem_set_memory_limit(p, Int64(limit === nothing ? -1 : limit), err), err)
    return p
end

"""Validates and freezes the problem (AlpaError naming the bad node / edge otherwise)."""
function finalize!(p::Problem)
    err = errref()
    throw_on(alpa_problem_finalize(p, err), err)
    return p
end

"""
    evaluate(p, assignment) -> Float64

The total cost of an assignment (one 0-based strategy per node); AlpaError with
`ALPA_ERR_INFEASIBLE` naming the violated constraint.
"""
function evaluate(p::Problem, assignment::AbstractVector{<:Integer})
    a = Int32.(assignment)
    cost = Ref{Cdouble}(NaN)
    err = errref()
    throw_on(alpa_problem_evaluate(cost, p, Int64(length(a)), a, err), err)
    return cost[]
end

"""
    Solution

What a solve found: `status` (`:optimal`, `:feasible` after a time limit, `:cancelled`),
`objective`, `lower_bound`, `seconds`, `assignment` (0-based strategies) and `message`.
"""
struct Solution
    status::Symbol
    objective::Float64
    lower_bound::Float64
    seconds::Float64
    assignment::Vector{Int32}
    message::String
end

const SOLVE_STATUS = Dict(ALPA_SOLVE_OPTIMAL => :optimal, ALPA_SOLVE_FEASIBLE => :feasible,
                          ALPA_SOLVE_CANCELLED => :cancelled)

# progress: a Julia function of an alpa_progress; returning `true` cancels the solve.
function progress_trampoline(user::Ptr{Cvoid}, report::Ptr{alpa_progress})::Int32
    f = unsafe_pointer_to_objref(user)::Base.RefValue{Any}
    try
        return f[](unsafe_load(report)) === true ? Int32(1) : Int32(0)
    catch e
        @error "Alpa progress callback failed; cancelling the solve" exception = e
        return Int32(1)
    end
end

function SolveOptions(; cancel::Union{Nothing,CancelToken} = nothing, progress = nothing,
                      options...)
    out = Ref{Ptr{alpa_solve_options}}(C_NULL)
    err = errref()
    throw_on(alpa_solve_options_create(out, err), err)
    o = SolveOptions(out[])
    for (key, value) in options
        throw_on(alpa_solve_options_set_by_name(o, string(key), option_text(value), err), err)
    end
    if cancel !== nothing
        throw_on(alpa_solve_options_set_cancel_token(o, cancel, err), err)
        push!(o.keep, cancel)
    end
    if progress !== nothing
        box = Ref{Any}(progress)
        push!(o.keep, box)
        fn = @cfunction(progress_trampoline, Int32, (Ptr{Cvoid}, Ptr{alpa_progress}))
        throw_on(alpa_solve_options_set_progress(o, fn, pointer_from_objref(box), err), err)
    end
    return o
end

option_text(v::Bool) = v ? "true" : "false"
option_text(v::Symbol) = String(v)
option_text(v) = string(v)

"""
    solve(path_or_problem; time_limit_seconds, threads, deterministic, relative_gap, ...,
          cancel = nothing, progress = nothing) -> Solution

Solves a sharding problem (a file path, read with [`read_problem`](@ref), or a finalized
[`Problem`](@ref)). Keyword options are the library's solve options by name
(`alpa_solve_options_set_by_name`). `progress(report::LibAlpa.alpa_progress)` runs on the calling
thread; returning `true` cancels. No answer (infeasible, a time limit or a cancellation before
any assignment) throws AlpaError with `ALPA_ERR_INFEASIBLE` / `_TIMEOUT` / `_CANCELLED`.
"""
function solve(path::AbstractString; kwargs...)
    p = read_problem(path)
    try
        return solve(p; kwargs...)
    finally
        close(p)
    end
end

function solve(p::Problem; kwargs...)
    o = SolveOptions(; kwargs...)
    out = Ref{Ptr{alpa_solution}}(C_NULL)
    err = errref()
    try
        throw_on(alpa_problem_solve(out, p, o, err), err)
    finally
        close(o)
    end
    s = out[]
    try
        n = check_count(alpa_solution_assignment(s, C_NULL, Int64(0)), "alpa_solution_assignment")
        a = Vector{Int32}(undef, n)
        alpa_solution_assignment(s, a, Int64(n))
        return Solution(SOLVE_STATUS[alpa_solution_status(s)], alpa_solution_objective(s),
                        alpa_solution_lower_bound(s), alpa_solution_seconds(s), a,
                        unsafe_string(alpa_solution_message(s)))
    finally
        alpa_solution_destroy(s)
    end
end

# ---- clusters --------------------------------------------------------------------------------

"""
    Cluster(spec; hosts = 0)

A cluster: a preset spec (`"p3.16xlarge"`, `"dgx-h100:hosts=2,devices_per_host=4"`), the CLI's
`"PRESET:HOSTS"` form (`"p3.16xlarge:2"`), or the path of a cluster JSON file.
"""
function Cluster(spec::AbstractString; hosts::Integer = 0)
    out = Ref{Ptr{alpa_cluster}}(C_NULL)
    err = errref()
    m = match(r"^([^:]+):(\d+)$", spec)
    if endswith(lowercase(spec), ".json") && isfile(spec)
        throw_on(alpa_cluster_read_file(out, String(spec), err), err)
    elseif m !== nothing
        throw_on(alpa_cluster_create_preset(out, String(m.captures[1]), parse(Int64, m.captures[2]), err), err)
    else
        throw_on(alpa_cluster_create_preset(out, String(spec), Int64(hosts), err), err)
    end
    return Cluster(out[])
end

Base.show(io::IO, c::Cluster) = isopen(c) ?
    print(io, "Cluster(\"", unsafe_string(alpa_cluster_name(c)), "\": ", alpa_cluster_hosts(c),
          " x ", alpa_cluster_devices_per_host(c), " devices)") : print(io, "Cluster(closed)")

# ---- pipeline planning -----------------------------------------------------------------------

function PlanOptions(; cancel::Union{Nothing,CancelToken} = nothing, options...)
    out = Ref{Ptr{alpa_plan_options}}(C_NULL)
    err = errref()
    throw_on(alpa_plan_options_create(out, err), err)
    o = PlanOptions(out[])
    for (key, value) in options
        throw_on(alpa_plan_options_set_by_name(o, string(key), option_text(value), err), err)
    end
    if cancel !== nothing
        throw_on(alpa_plan_options_set_cancel_token(o, cancel, err), err)
        push!(o.keep, cancel)
    end
    return o
end

"""
    plan(model = "gpt-2.6b"; cluster = "p3.16xlarge:2", cancel = nothing, options...) -> Plan

Plans a model-zoo spec (`"gpt-2.6b"`, `"gpt:hidden=256,layers=4,heads=4,seq=128,vocab=1000,batch=16"`)
on a cluster (a [`Cluster`](@ref) or its spec). Keyword options are the planner's options by name
(`microbatches = 16`, `num_layers = 8`, `remat = :off` (or `:on`, `:selective`, `:search`),
`threads = 4`, `device_memory_bytes`, ...).
"""
function plan(model::AbstractString = "gpt-2.6b"; cluster = "p3.16xlarge:2", kwargs...)
    c = cluster isa Cluster ? cluster : Cluster(cluster)
    o = PlanOptions(; kwargs...)
    out = Ref{Ptr{alpa_plan}}(C_NULL)
    err = errref()
    try
        throw_on(alpa_model_plan(out, String(model), c, o, err), err)
    finally
        close(o)
        cluster isa Cluster || close(c)
    end
    return Plan(out[])
end

"""
    Stage

One pipeline stage of a plan: its layers (0-based, inclusive range), submesh (hosts, devices
per host), logical mesh shape, physical device ids, data / tensor parallel degrees, whether
ZeRO is on, its recomputation, latency of one microbatch (forward + backward) and the
per-device memory at its peak.

`recompute` is what the backward recomputes, named as the `remat` option takes it: `:off`,
`:on` (full: every forward) or `:selective` (only the attention cores: scores, softmax, their
product with V). `remat` is `true` when anything is recomputed, full or selective.
"""
struct Stage
    index::Int
    layers::UnitRange{Int}
    submesh::Tuple{Int,Int}
    logical_mesh::Vector{Int}
    devices::Vector{Int64}
    data_parallel::Int
    tensor_parallel::Int
    zero::Bool
    remat::Bool
    latency_seconds::Float64
    memory_bytes::Int64
    recompute::Symbol
end

# alpa_stage_info.remat (0 none, 1 full, 2 selective) as the `remat` option names it; `:search`
# for a kind this binding does not know (a newer library).
recompute_symbol(kind::Integer) = get((:off, :on, :selective), kind + 1, :search)

"""The stages of a plan, in pipeline order."""
function stages(p::Plan)
    result = Stage[]
    err = errref()
    for i in 0:alpa_plan_stage_count(p)-1
        info = Ref{alpa_stage_info}()
        throw_on(alpa_plan_stage(info, sizeof(alpa_stage_info), p, Int32(i), err), err)
        s = info[]
        n = check_count(alpa_plan_stage_devices(p, Int32(i), C_NULL, Int64(0)), "alpa_plan_stage_devices")
        devices = Vector{Int64}(undef, n)
        alpa_plan_stage_devices(p, Int32(i), devices, Int64(n))
        push!(result, Stage(i, s.first_layer:s.last_layer,
                            (Int(s.submesh_hosts), Int(s.submesh_devices_per_host)),
                            Int[s.logical_mesh[k] for k in 1:s.logical_ndim], devices,
                            s.data_parallel, s.tensor_parallel, s.zero != 0, s.remat != 0,
                            s.latency_seconds, s.memory_bytes, recompute_symbol(s.remat)))
    end
    return result
end

"""Predicted seconds per training iteration (what the planner minimises)."""
iteration_seconds(p::Plan) = alpa_plan_iteration_seconds(p)
"""Microbatches per iteration."""
microbatches(p::Plan) = Int(alpa_plan_microbatches(p))

"""
    pipeline_schedule(plan)

The schedule the plan is made for, as an `ALPA_SCHEDULE_*` constant: `ALPA_SCHEDULE_1F1B`,
`ALPA_SCHEDULE_ZB_H1` (the `zero_bubble` option) or `ALPA_SCHEDULE_INTERLEAVED_1F1B` (the
`interleave` option). Its prediction assumes it; `simulate` and `timeline_svg` run it by default.
"""
pipeline_schedule(p::Plan) = alpa_plan_pipeline_schedule(p)

# The names the plan JSON and the CLI give the ALPA_SCHEDULE_* values.
const SCHEDULE_NAMES = Dict{Int32,String}(ALPA_SCHEDULE_GPIPE => "gpipe",
                                          ALPA_SCHEDULE_1F1B => "1f1b",
                                          ALPA_SCHEDULE_ZB_H1 => "zb-h1",
                                          ALPA_SCHEDULE_INTERLEAVED_1F1B => "interleaved-1f1b")

"""
    schedule_name(plan)

The name of the plan's schedule as the plan JSON writes it: `"1f1b"`, `"zb-h1"` or
`"interleaved-1f1b"`.
"""
schedule_name(p::Plan) = get(SCHEDULE_NAMES, Int32(pipeline_schedule(p)), "1f1b")

"""
    virtual_stages(plan)

Stages per device group: 1, or v >= 2 for an interleaved 1F1B plan, whose stage `s` (0-based)
then runs on the devices of stage `s % (length(stages(plan)) ÷ v)`.
"""
virtual_stages(p::Plan) = Int(alpa_plan_virtual_stages(p))

"""The plan as JSON (`detail = 1`: also per-op strategies, collectives and slice moves)."""
function to_json(p::Plan; detail::Integer = 0)
    out = Ref{Ptr{alpa_buffer}}(C_NULL)
    err = errref()
    throw_on(alpa_plan_to_json(out, p, Int32(detail), err), err)
    return take_buffer(out[])
end

function Base.show(io::IO, p::Plan)
    isopen(p) || return print(io, "Plan(closed)")
    print(io, "Plan(", alpa_plan_stage_count(p), " stages, ", microbatches(p), " microbatches, ",
          schedule_name(p), ", ", round(iteration_seconds(p); sigdigits = 4), " s/iteration)")
end

function with_simulation(f, p::Plan, schedule::Integer; programs::Bool = false)
    out = Ref{Ptr{alpa_simulation}}(C_NULL)
    err = errref()
    if programs
        throw_on(alpa_plan_simulate_programs(out, p, Int32(schedule), err), err)
    else
        throw_on(alpa_plan_simulate(out, p, Int32(schedule), err), err)
    end
    try
        return f(out[])
    finally
        alpa_simulation_destroy(out[])
    end
end

"""
    simulate(plan; schedule = pipeline_schedule(plan), programs = false)

Runs one iteration of the plan event by event (experimental API) under `schedule`, an
`ALPA_SCHEDULE_*` constant: by default the plan's own (an interleaved plan runs under nothing
else, a plain one never under `ALPA_SCHEDULE_INTERLEAVED_1F1B`: `AlpaError` with
`ALPA_ERR_INVALID_ARGUMENT`). With `programs = true` from the plan's device programs, every
instruction priced by the cost model (`alpa simulate --programs`). Returns
`(iteration_seconds, closed_form_seconds, planner_seconds)`.
"""
simulate(p::Plan; schedule::Integer = pipeline_schedule(p), programs::Bool = false) =
    with_simulation(p, schedule; programs = programs) do s
        (iteration_seconds = alpa_simulation_iteration_seconds(s),
         closed_form_seconds = alpa_simulation_closed_form_seconds(s),
         planner_seconds = alpa_simulation_planner_seconds(s))
    end

"""
    timeline_svg(plan; width = 0, schedule = pipeline_schedule(plan))

The simulated iteration's timeline as an SVG picture (`width` 0: 1600 pixels), under the plan's
own schedule unless `schedule` says otherwise.
"""
timeline_svg(p::Plan; width::Integer = 0, schedule::Integer = pipeline_schedule(p)) =
    with_simulation(p, schedule) do s
        out = Ref{Ptr{alpa_buffer}}(C_NULL)
        err = errref()
        throw_on(alpa_simulation_timeline_to_svg(out, s, Int32(width), err), err)
        take_buffer(out[])
    end

end # module Alpa
