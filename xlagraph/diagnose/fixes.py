"""Every fix text the engine can print, by ID.

A fix is a claim: changing the user's script as the text says makes it compile fewer graphs.
Each ID names a pair of real scripts under `fixtures/torch_xla/fixes/<ID>/` (`bug.py`, and
`fixed.py`, changed exactly as the text says) that `tests/test_fixes_work.py` runs under torch_xla,
or an entry of `NOT_SHOWN` saying why no single-device CPU run can show it. Recognizers refer
to texts by ID (`fix(ID)`), so the test can enumerate them all, and reports print the ID beside
the text (`fix_id`).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

__all__ = ["CACHE_LIMIT_FIX", "EAGER_SHAPE_FIX", "FIXES", "NOT_SHOWN", "fix", "fix_id"]

# An ID without a dot is a cause kind's value: that kind's default hint (causes.HINTS). A comment
# above another ID names the constant or module that prints it.
FIXES: Mapping[str, str] = MappingProxyType(
    {
        "parameter_permutation": (
            "keep the order in which tensors are created or updated fixed across steps: flush deferred "
            "collectives (FSDP reduce-scatter buckets) in a fixed order, iterate over sorted keys, not "
            "sets"
        ),
        "output_permutation": (
            "keep the order in which live tensors are produced fixed across steps: fill dicts of "
            "statistics in a fixed key order, update parameters in a fixed order"
        ),
        "parameter_shape": (
            "keep input shapes fixed: pad the last batch or use drop_last=True, bucket or pad variable "
            "sequence lengths to a few fixed sizes"
        ),
        "output_added": (
            "a tensor is kept alive (or materialized) only on some steps: compute it on every step, or "
            "read it after the sync inside xm.add_step_closure, and drop references to it afterwards"
        ),
        # recognizers/returned_output.py
        "output_added.returned": (
            "the compiled function returns this tensor on some calls only (an `if` on a Python argument "
            "adds it to what it returns): return the same outputs on every call, computing it each step, "
            "and leave it unread on the host when it is not wanted"
        ),
        "output_removed": (
            "a tensor that was kept alive before is not any more: compute it on every step, or read it "
            "after the sync inside xm.add_step_closure"
        ),
        "constant_value": (
            "a Python scalar is baked into the graph as a constant (PyTorch/XLA bakes 0 and 1, and values it "
            "cannot pass as parameters): keep it fixed, or pass it as a 1-element device tensor made on the "
            "host each step (torch.tensor([x]).to(device)); a 0-dim tensor holding 0 or 1 is baked too"
        ),
        "attribute": (
            "a Python int reached an op parameter (slice bounds, dimensions, sizes): keep it fixed, or "
            "index with a device tensor (index_select / gather) so the graph does not depend on it"
        ),
        "collective": (
            "collectives were grouped differently: keep the bucketing fixed across steps "
            "(reduce_scatter_bucket_size_mb, coalescing) and make every bucket flush in the same step"
        ),
        "structure": (
            "xlagraph does not know this pattern: compare the two graphs' op types at the cited line, and"
            " make that code run the same way on every step"
        ),
        "graph_break": (
            "a sync inside the step (.item(), .cpu(), print(tensor), Python control flow on a tensor) cut"
            " the graph: move it after the step's sync, read values in xm.add_step_closure, or keep the "
            "decision on the device (torch.where)"
        ),
        "dynamic_shape": (
            "a shape comes from data values (boolean mask, nonzero, unique, masked_select): keep shapes "
            "static, e.g. torch.where(mask, x, 0) and a masked sum/mean instead of x[mask], and counts "
            "per class with one_hot(x, n).sum(0) or bincount(x, minlength=n) instead of unique"
        ),
        "conditional_work": (
            "work runs only on some steps (if step % k == 0: clipping, logging, metrics): run it on every"
            " step (cheap, no recompile), or accept exactly one extra graph and keep k fixed"
        ),
        "state_init": (
            "expected warm-up: state created on the first steps (optimizer buffers) changes the graph "
            "once; nothing to do unless it keeps changing"
        ),
        "dtype": (
            "an element type changed: keep autocast / .to(dtype) / model.half() the same on every step, "
            "and create tensors with an explicit dtype"
        ),
        "layout": (
            "the same shapes in another layout or memory space compile as another program: keep the "
            "tensors' layout fixed (no .contiguous()/.t() toggling, same placement) across steps"
        ),
        "sharding": (
            "a sharding changed: call xs.mark_sharding with the same mesh and partition spec on every "
            "step, and shard the inputs once before the loop"
        ),
        "parameter_added": (
            "the graph takes a new input on this step: a tensor (state, a Python value passed as data) "
            "exists only from this step on; create it before the loop"
        ),
        "parameter_removed": (
            "the graph no longer takes an input it took before: a tensor was dropped or became a constant "
            "the graph makes (a state reset with torch.zeros); keep what the step reads the same on every "
            "step, e.g. reset it by multiplying it with a 1-element device tensor made on the host "
            "(torch.tensor([0.0 if reset else 1.0]).to(device))"
        ),
        "dead_code": (
            "compute only what you use (e.g. torch.mean instead of torch.std_mean(...)[1]), or compute "
            "the unused part the same way on every step"
        ),
        # parallelism.HINT
        "collective.parallel_layout": (
            "the parallel layout changed (world size, tensor- or data-parallel degree, replica groups): "
            "expected when comparing two configurations; within one run keep the device mesh and the "
            "process groups fixed"
        ),
        # collective_scale.HINT
        "collective.scale": (
            "the collective's results are scaled in one graph only: torch_xla multiplies a reduced tensor"
            " by its scale only when the scale is not 1.0 (xm.all_reduce(scale=...), gradient averaging "
            "over replicas in xm.reduce_gradients / xm.optimizer_step): keep the averaging, and the world"
            " size it divides by, the same on every step"
        ),
        # fsdp_layout.HINT
        "collective.fsdp_wrapping": (
            "the FSDP wrapping changed (auto_wrap_policy, flatten_parameters, shard padding): each "
            "wrapping shards the weights into other flat shards and compiles its own graph; expected when"
            " comparing two configurations; within one run wrap the model once, the same way on every "
            "rank"
        ),
        # input_shape.BATCH_HINT
        "parameter_shape.batch": (
            "the batch dimension changed: a ragged last batch; use drop_last=True, or pad the last batch "
            "to the full size (and mask its padding out of the loss)"
        ),
        # report.dynamo.optional_argument; guards.KINDS["optional_argument"]
        "conditional_work.optional_argument": (
            "an argument that is None on some calls and a tensor on others (an optional mask passed only "
            "when a batch is padded) makes torch.compile trace each case, and the `if x is not None:` "
            "inside picks other code for each, a graph of its own: pass a tensor on every call (an "
            "all-ones mask when nothing is padded), so the same code runs every step"
        ),
        # input_shape.FILTERED_HINT
        "parameter_shape.filtered_batch": (
            "rows kept by a mask on the host (`x[keep]`: unlabelled or invalid rows dropped) make the "
            "batch size follow the data, a graph for each size: keep every row and mask the dropped "
            "ones out of the loss (labels set to ignore_index, or a 0/1 weight per row), so every step "
            "has the same batch"
        ),
        # input_shape.GROWN_BATCH_HINT
        "parameter_shape.grown_batch": (
            "the batch size grew (another DataLoader, a curriculum or a batch-size schedule): each batch "
            "size compiles once; accept one graph per size, or, with many sizes, keep one micro-batch "
            "size and grow the effective batch by gradient accumulation, with torch_xla.sync() after each"
            " micro-batch's backward and the optimizer step synced on its own (gradients made before the"
            " loop, zero_grad(set_to_none=False)): the same few graphs for any batch size"
        ),
        # input_shape.SEQUENCE_HINT
        # input_shape.GROWING_STATE_HINT
        "parameter_shape.growing_state": (
            "state the step returns is fed back with a dimension that grows (a memory bank, a cache or a "
            "history grown by torch.cat and cut to its size): each size is a graph of its own; preallocate "
            "it at its full size before the loop and write each step's rows into it in place, a ring buffer "
            "(index_copy_ at a position kept on the device) with a mask of the rows filled so far, so every "
            "step reads the same shape"
        ),
        "parameter_shape.sequence": (
            "a non-batch dimension changed, typically a sequence length: pad to a fixed length, or bucket"
            " lengths to a few fixed sizes (each compiles once)"
        ),
        # input_shape.IMAGE_HINT
        "parameter_shape.image": (
            "the height or width of an image batch changed: resize or crop every image to one size (or "
            "pad to it), or bucket sizes to a few fixed ones (each compiles once)"
        ),
        # input_shape.WEIGHTS_HINT
        "parameter_shape.weights": (
            "inputs the step updates (weights, optimizer state) changed shape: another model "
            "configuration (hidden size, vocabulary, heads) or another set of layers (a pipeline stage "
            "holding other blocks); compare the two configurations, and keep one per run"
        ),
        # input_shape.LIST_HINT
        "parameter_shape.list": (
            "integer vectors of another length (indices or labels from a Python list: word starts, tags, "
            "selected positions): pad each list to a fixed length and mask the padding out of the loss, "
            "or bucket lengths to a few fixed sizes"
        ),
        # input_shape.PYTHON_LIST_HINT
        "parameter_shape.python_list": (
            "a tensor made from a Python list each step (torch.tensor([...]): class weights, one value "
            "per class or item) changes length with the list: size it once for all classes (the maximum "
            "there will be), with zero for the entries not used yet and a mask where the step needs one, "
            "and slice by that fixed size, so every step passes the same shape"
        ),
        # piece_count.HINT
        "parameter_shape.piece_count": (
            "a Python count decides how many pieces a concatenation joins (the length of a list passed "
            "to torch.cat, t.repeat(n)): each count is a graph of its own; keep the same number from "
            "the start (pad the list to its largest length and mask the padded pieces out), or bucket "
            "the counts to a few fixed ones"
        ),
        # input_shape.RESIZED_WEIGHTS_HINT
        "parameter_shape.resized_weights": (
            "weights changed shape during the run (a vocabulary grown for new tokens, a layer resized): "
            "do it once before training starts, reserving room up front (pad the vocabulary to a multiple"
            " of 64 or to its final size), so the step compiles once"
        ),
        # input_shape.SWITCHED_WEIGHTS_HINT
        "parameter_shape.switched_weights": (
            "the step used other weights of another shape than before, within one run: a module picked by"
            " a key on some steps (heads[task](x), a ModuleDict / ModuleList lookup); each pick is a "
            "graph: run all heads every step and mask the losses, or give the heads the same shape"
        ),
        # input_shape.OTHER_HINT
        "parameter_shape.other": (
            "keep input shapes fixed across steps: pad, or bucket them to a few fixed sizes"
        ),
        # special_scalar.HINT
        "constant_value.zero_one": (
            "PyTorch/XLA bakes the Python scalars 0 and 1 as constants and passes other values as inputs: "
            "a value that is 0 or 1 on some steps (a learning rate warming up from 0.0, an EMA decay of 0.0, "
            "mul_(0.0 if ... else 1.0)) changes the graph; start at a small non-zero value (1e-8), or pass "
            "it as a 1-element device tensor made on the host each step (torch.tensor([x]).to(device), or "
            "buf.copy_(torch.tensor([x]))): a 0-dim tensor holding 0 or 1, and fill_(x), are baked too"
        ),
        # special_scalar.OTHER_HINT
        "constant_value.python_scalar": (
            "a Python scalar is baked into the graph as a constant: keep it fixed, or pass it as a 1-element "
            "device tensor made on the host each step (torch.tensor([x]).to(device)); a 0-dim tensor holding "
            "0 or 1, and fill_(x), are baked too"
        ),
        # special_scalar.TENSOR_HINT
        "constant_value.tensor_from_numbers": (
            "Python numbers became the values of a tensor built in the graph (torch.arange(offset, ...), "
            "torch.full, torch.tensor of a list): build it from fixed values plus a device tensor "
            "instead, e.g. torch.arange(T, device=dev) + offset_t with offset_t a device tensor updated "
            "in place, or index a fixed table with a tensor index"
        ),
        # scalar_ops.HINT
        "constant_value.scalar_op": (
            "a Python scalar's value changes the program: one that is 0 or 1 on some calls (label "
            "smoothing 0.0, a loss scale of 1.0) lets x * 1.0 or x + 0.0 drop out, and other values are "
            "baked in: keep it away from 0 and 1, or pass it as an array argument / device tensor updated"
            " in place"
        ),
        # growing_list.HINT
        "parameter_added.growing_list": (
            "a Python list of tensors grows and the step stacks it: each element is an input of its own, "
            "so every new length compiles again; keep a fixed-size buffer tensor on the device (a window "
            "of the last k values, preallocated, updated in place with roll/index_copy_) instead of a "
            "growing list"
        ),
        # shared_scalar.HINT
        "parameter_added.shared_scalar": (
            "expected warm-up: Python scalars that were equal on the first step (an EMA decay of 0.1 and "
            "Adam's 1 - beta1) shared one device value, since torch_xla makes one input of equal scalars;"
            " once their values differ each is an input of its own, and the graph changes once; nothing "
            "to do unless it keeps changing"
        ),
        # shared_scalar.MERGED_HINT
        "parameter_removed.shared_scalar": (
            "a Python scalar that changes from step to step (a schedule's weight, a warm-up factor) was "
            "equal on this step to another Python scalar the step uses, and torch_xla uploads equal "
            "scalars once: the graph read one input for both, a graph of its own each time the values "
            "meet; pass the changing value as a 1-element device tensor made on the host each step "
            "(torch.tensor([x]).to(device)): it is then an input of its own whatever its value"
        ),
        # new_input._LAYER_HINT
        "parameter_added.layer": (
            "one graph runs work the other does not, with weights and results of its own (a layer, or a "
            "pipeline stage's share of the model): expected when comparing two model or stage partitions;"
            " within one run keep which layers run the same on every step"
        ),
        # optimizer_swap.HINT
        "parameter_added.optimizer_swap": (
            "expected once per swap: the optimizer was replaced mid-run (a new optimizer object assigned "
            "to the name whose step() the loop calls), so the update is other work with other state "
            "(Adam's moments read no more, or new buffers made) and the step compiles again; nothing to "
            "fix unless it swaps often: then keep one optimizer from the start and change its settings "
            "(lr, momentum) as device tensors"
        ),
        # weight_tie.HINT
        "parameter_removed.weight_tie": (
            "weights were tied mid-run (one module's weight assigned to another's, head.weight = "
            "embed.weight): the step's parameter set changed (the old tensor is read and updated no "
            "more, the shared one gets both gradients), so the step compiles again; tie them before the "
            "first step, right after building the model and before making the optimizer, so every step "
            "sees the same parameters (an untied warm-up costs this compile once per tie)"
        ),
        # python_int.SIZE_HINT
        "attribute.size": (
            "a size given as a Python int changed (F.interpolate(size=...), a view or reshape, a slice to"
            " a batch's own length, topk's k): keep one fixed size (resize or pad every batch to the same"
            " size / one resolution; a fixed k, masking the entries beyond it), or bucket sizes so each "
            "compiles once"
        ),
        # python_int.RANKED_HINT
        "attribute.size.ranked": (
            "the number of entries kept from a ranking follows a Python value (argsort(x)[:k], topk's k, "
            "a keep ratio on a schedule): every k is a graph of its own. Rank all entries on every step "
            "and keep the k best with a mask on the device: ranks = argsort(argsort(x)), weights = "
            "(ranks < k).float() with k a 1-element tensor made on the host (torch.tensor([k]).to(device))"
            ", and weight the loss by it"
        ),
        # python_int.FLAG_HINT
        "attribute.flag": (
            "an op's keyword flag differs (stable=, indices_are_sorted=, unique_indices=, a mode switch):"
            " the call that makes the op passes another option on some steps; pass the same flags every "
            "time"
        ),
        # annotation.HINT
        "attribute.annotation": (
            "frontend attributes are directives XLA compiles from (host offloading with compute_on, "
            "scheduling groups, composite ops): apply the same annotation to the same code on every step"
        ),
        # annotation.CONFIG_HINT
        "attribute.backend_config": (
            "a custom kernel's configuration (backend_config) changed: the Python arguments its call is "
            "built from (a flag, a block size, a LAPACK triangle) differ; keep them fixed across steps"
        ),
        # donation.HINT
        "attribute.donation": (
            "buffer donation differs: donate the same inputs on every call (the same donate_argnums in "
            "JAX; in torch_xla, the same tensors updated in place, with no other reference holding their "
            "old value)"
        ),
        # checkpointing.HINT
        "structure.checkpointing": (
            "activation checkpointing (torch.utils.checkpoint / torch_xla.utils.checkpoint, "
            "jax.checkpoint) is on in one graph only: its forward is recomputed in the backward pass "
            "behind an optimization barrier. Expected when comparing the two settings; within one run, "
            "checkpoint the same modules on every step"
        ),
        # dtype._INT_HINT
        "dtype.integer": (
            "an integer input arrives as another type (int32 on some batches, int64 on others: numpy "
            "arrays, Python ints and torch.tensor give different ones): cast it once in the data pipeline"
            " (.long() / .to(torch.int64)) so every batch has the same dtype"
        ),
        # random_skip.HINT
        "conditional_work.random_skip": (
            "a layer is skipped at random by a number drawn in Python (LayerDrop: transformers' "
            "layerdrop, encoder_layerdrop or decoder_layerdrop > 0; stochastic depth written with "
            "random.random()): every set of skipped layers is a graph of its own, so it compiles for many"
            " steps. Set that probability to 0.0 when training on XLA, or run the block on every step and"
            " drop on the device: multiply its residual branch by a per-sample Bernoulli mask (timm's "
            "DropPath, torchvision's stochastic_depth)"
        ),
        # _switched_on._SWITCH_HINT
        "conditional_work.switched_on": (
            "a Python value turns library work on or off from some step (label_smoothing 0.0 -> 0.1, or "
            "annealed to exactly 0.0; a weight decay or loss weight that torch skips at 0): each setting "
            "is a graph of its own; use the setting from the start, or keep the work and scale it by a "
            "tensor that is 0 while it is off"
        ),
        # _host_branch.BRANCH_HINT
        # replaced_branch._HINT
        # random_skip._LOOP_HINT
        "conditional_work.host_iterations": (
            "a loop stops when a value read from the device says so (`if rel.item() < tol: break`): "
            "each number of iterations is a graph of its own, and every read is a sync. Run a fixed "
            "number of iterations (max_iter) on every step and freeze the converged state on the device "
            "(z = torch.where(done, z, z_next)), or check convergence once, outside the step"
        ),
        # unrolled_loop._HINT
        "conditional_work.trip_count": (
            "a Python loop inside the traced step runs another number of times (micro-batches of "
            "gradient accumulation, a loop over a list whose length changed): tracing unrolls it, one "
            "copy of its body per iteration, so each count is a graph of its own; keep the count fixed "
            "(the same number of micro-batches on every step), or move the loop out of the compiled "
            "function (one compiled call per micro-batch, the optimizer step once after the last)"
        ),
        # dynamo_join.branches.ARGUMENT_FIX: a guard on a Python argument that an `if` or `a if
        # flag else b` in the compiled function tests
        "conditional_work.python_argument": (
            "a Python argument of the compiled function (a str or bool that picks a mode, a mask, a "
            "branch) decides which code runs inside it: dynamo guards on its value and traces each value "
            "again, a graph of its own with its backward; pass the selection as a tensor instead: a "
            "precomputed mask (all True where nothing is masked) or a 1-element bool tensor on the "
            "device, chosen with torch.where inside the compiled function, so one trace serves every call"
        ),
        "conditional_work.host_branch": (
            "work runs only when a Python condition holds on the host (random.random(), a flag, a "
            "counter): each outcome is a graph of its own; compute it on every step and choose on the "
            "device with torch.where, or decide once, outside the loop"
        ),
        # trainable.HINT
        "trainable.requires_grad": (
            "parameters were frozen or unfrozen between steps (requires_grad changed): the graph gains or "
            "loses their backward and updates, one compile per set of trained parameters (expected once per "
            "switch); to freeze without a compile, keep requires_grad and multiply their gradients on every "
            "step by a 1-element device tensor (torch.tensor([0.0 if frozen else 1.0]).to(device)) before "
            "opt.step(), with plain SGD (momentum, weight decay or Adam would still move them); a param "
            "group's lr set to 0 is a baked 0 and compiles again"
        ),
        # trainable.PHASE_HINT
        "trainable.phase": (
            "expected: a new phase of training (a new optimizer over more parameters, fine-tuning after "
            "a linear probe) trains another set of parameters, so the step gains their backward and "
            "updates and compiles once for that phase; nothing to fix"
        ),
        # dynamo_join.expected.switch_fix: a compiled function run under no_grad / set_grad_enabled(False)
        # on the first steps only (a linear probe), with gradients from then on
        "trainable.switched_grad_mode": (
            "the compiled function ran without gradients (torch.no_grad() / set_grad_enabled(False) / "
            "inference_mode) on some steps only, so torch.compile traced it again when the grad mode "
            "switched and compiled every graph of it anew: keep the grad mode the same on every call, "
            "with gradients from the start, and let a 1-element device tensor choose how much gradient "
            "flows back, h = h.detach() + keep * (h - h.detach()) on its output with keep = "
            "torch.tensor([0.0 if frozen else 1.0]).to(device), with plain SGD (momentum, weight decay "
            "or Adam would still move the frozen weights)"
        ),
        # trainable.DETACH_HINT
        "trainable.detach": (
            "a Python flag detaches a part of the model from some step (`if frozen: h = h.detach()`): "
            "the step loses (or gains) that part's backward and updates, one compile per setting; to "
            "freeze it without a compile, run the same code on every step and let a 1-element device "
            "tensor choose how much gradient passes, h = h.detach() + keep * (h - h.detach()) with keep "
            "= torch.tensor([0.0 if frozen else 1.0]).to(device) (under torch.compile made outside the "
            "compiled function and passed in as an argument), with plain SGD (momentum, weight decay or "
            "Adam would still move the frozen weights)"
        ),
        # bridge_sync.HINT
        "state_init.bridge_sync": (
            "expected: torch.compile's warm-up (the openxla bridge syncs all pending work when it first "
            "compiles a graph, and only the compiled graph's inputs afterwards); nothing to fix"
        ),
        # cw._PATTERNS
        "conditional_work.clipping": (
            "clip on every step (clip_grad_norm_ is cheap next to the step), or accept one extra graph "
            "and keep k fixed; do not toggle it by a data-dependent condition"
        ),
        # cw._PATTERNS
        "conditional_work.dropout": (
            "dropout is on in model.train() and off in model.eval(), so each mode is its own graph: call "
            "model.train() before every training step (an evaluate() that calls model.eval() leaves it "
            "off), and switch modes on a fixed schedule so that each compiles once"
        ),
        # dynamo_join.expected.switch_fix: a module of the user's own (or a library's other than
        # dropout) that reads self.training, put in eval() for good mid-run
        "conditional_work.training_branch": (
            "the module put in eval() runs other work in train mode (your own `if self.training:` "
            "noise, augmentation or stochastic depth), so switching its mode for good mid-run "
            "compiles every graph of it anew: to turn that work off, keep the module in train mode "
            "and scale the work by a 1-element device tensor passed to the compiled function (1.0, "
            "then 0.0 from that step), or set the mode once, before the first step"
        ),
        # cw._PATTERNS
        "conditional_work.dropout_zero": (
            "a dropout probability reached exactly 0.0 (a schedule that decays it): at p=0 dropout "
            "leaves the graph, other values of p are passed as data; floor the schedule at a small "
            "non-zero value (max(p, 1e-3)) so that every step runs the same graph"
        ),
        "conditional_work.accumulation": (
            "expected with gradient accumulation: two graphs (accumulate, and accumulate + step) that "
            "each compile once; keep k fixed and call torch_xla.sync() at the same place every step"
        ),
        # permutation._PLAIN
        "parameter_permutation.plain": (
            "keep the order in which tensors are created or updated the same on every step: update "
            "parameters in a fixed order (not sorted by a value that changes, such as a per-layer "
            "learning rate), iterate over sorted keys, not sets"
        ),
        # term_order
        "parameter_permutation.sum_terms": (
            "the terms of a sum are added in the order their container holds them: keep that order "
            "the same on every step (update an entry in place instead of popping and inserting it "
            "again, which moves it last; or sum over sorted keys)"
        ),
        # permutation._PLAIN
        "output_permutation.plain": (
            "keep the order in which live tensors are produced the same on every step: fill dicts of "
            "statistics in a fixed key order, update parameters in a fixed order"
        ),
        # residue
        "structure.operand_order": (
            "the same expression is written with its operands in another order on some steps (a * b vs b "
            "* a, or a reducer / comparator with its arguments swapped): torch_xla hashes operand order, "
            "so write it one way"
        ),
        # collectives
        "collective.other_tensors": (
            "the collectives move other tensors: work that issues them runs in one graph only (a layer "
            "added, activation checkpointing's recomputed forward, a norm all-reduced for clipping, a "
            "parallel layout changed): make that work the same on every step"
        ),
        "collective.order": (
            "the same collectives are issued in another order: torch_xla chains them in the order "
            "their hooks fire, so sub-modules that run in another order from step to step (a routing "
            "or branch choice deciding which module is called first) make FSDP flush its "
            "reduce-scatter buckets in another order, a graph of its own; call the modules in one "
            "fixed order on every step and select or combine their results instead (bucket size is "
            "no fix: unbucketed reduce-scatters follow the same order)"
        ),
        # report.build
        "own_graph": (
            "expected: work synced at its own point (an evaluation pass, metrics, a checkpoint) is a "
            "graph of its own, compiled once and reused; keep it the same each time it runs (the same "
            "batch shapes, model.eval() / train() around it), and separate from the training step"
        ),
        # residue
        "structure.residue": "make the code behind these instructions run the same way on every step",
    }
)

# IDs that no pair of scripts under fixtures/torch_xla/fixes/ shows, by why. Every other ID has
# a folder there; tests/test_fixes_work.py checks that the two lists cover the registry.
_NOT_SHOWN_BY_WHY = (
    (
        "says the change is expected (nothing to fix); no pair of scripts can show fewer compiles",
        "state_init own_graph collective.parallel_layout collective.fsdp_wrapping structure.checkpointing "
        "parameter_shape.weights parameter_added.layer parameter_added.optimizer_swap "
        "parameter_added.shared_scalar conditional_work.accumulation trainable.phase state_init.bridge_sync",
    ),
    (
        "needs several devices or ranks (collectives, shardings): no single-device CPU run shows it",
        "collective collective.scale collective.other_tensors sharding",
    ),
    (
        "printed for JAX / XLA programs (donation, frontend attributes, custom calls), not torch_xla steps",
        "attribute.donation attribute.annotation attribute.backend_config constant_value.scalar_op",
    ),
    (
        "printed where xlagraph does not know the pattern: it names no change to make",
        "structure structure.residue",
    ),
    (
        "the fallback text of a kind whose recognizers word a specific fix; the specific fixes of this "
        "kind have scripts",
        "parameter_permutation output_permutation parameter_shape constant_value conditional_work "
        "parameter_added parameter_shape.other",
    ),
)
NOT_SHOWN: Mapping[str, str] = MappingProxyType(
    {fid: why for why, ids in _NOT_SHOWN_BY_WHY for fid in ids.split()}
)

# Fixes of the compile halves, printed without an ID (reports give `fix_id` only to the registry's):
# proved by tests/test_compiled_fixes.py (eager_shape: 46 -> 42 op compiles on torch_xla 2.9).
EAGER_SHAPE_FIX = (
    "eager mode compiles every op once per input shape: pad the input to one fixed size (or a few "
    "bucket sizes) before the step, masking the padding, so each op sees the shapes it was compiled for"
)
# torch.compile gave up on a frame: the recompiles before it say what changed.
CACHE_LIMIT_FIX = (
    "fix the change named in the recompiles before it; "
    "torch._dynamo.config.recompile_limit raises the "
    "limit, but every recompile costs a compile"
)

_BY_TEXT: Mapping[str, str] = MappingProxyType({text: fid for fid, text in FIXES.items()})


def fix(fid: str) -> str:
    """The text of fix `fid` (a KeyError names an ID the registry lacks)."""
    return FIXES[fid]


def fix_id(text: str) -> str:
    """The ID of a fix text; `` for a text the registry does not hold."""
    return _BY_TEXT.get(text, "")
