//! Instruction attributes XLA requires, and the value grammars it checks while parsing
//! (windows, convolution dimension labels, result accuracy, custom-call API versions).

/// Attributes without which XLA's parser refuses an opcode (`required=true` in hlo_parser.cc).
const REQUIRED: &[(&str, &[&str])] = &[
    ("transpose", &["dimensions"]),
    ("reverse", &["dimensions"]),
    ("concatenate", &["dimensions"]),
    ("reduce", &["dimensions", "to_apply"]),
    ("sort", &["dimensions", "to_apply"]),
    ("map", &["to_apply"]),
    ("call", &["to_apply"]),
    ("reduce-window", &["to_apply"]),
    ("all-reduce", &["to_apply"]),
    ("all-reduce-start", &["to_apply"]),
    ("reduce-scatter", &["dimensions", "to_apply"]),
    ("all-gather", &["dimensions"]),
    ("all-gather-start", &["dimensions"]),
    ("while", &["condition", "body"]),
    ("fusion", &["kind", "calls"]),
    ("get-tuple-element", &["index"]),
    ("iota", &["iota_dimension"]),
    ("slice", &["slice"]),
    ("dynamic-slice", &["dynamic_slice_sizes"]),
    ("pad", &["padding"]),
    ("compare", &["direction"]),
    ("custom-call", &["custom_call_target"]),
    ("select-and-scatter", &["select", "scatter"]),
    ("reduce-precision", &["exponent_bits", "mantissa_bits"]),
    ("topk", &["k"]),
    ("collective-permute", &["source_target_pairs"]),
    ("collective-permute-start", &["source_target_pairs"]),
    ("get-dimension-size", &["dimensions"]),
    ("set-dimension-size", &["dimensions"]),
    ("fft", &["fft_type", "fft_length"]),
    ("rng", &["distribution"]),
];

/// Every instruction attribute name XLA's parser knows, for any opcode: a name outside it is
/// refused as XLA refuses it ("unexpected attribute"). Which opcode takes which is not checked.
const KNOWN: &[&str] = &[
    "algorithm",
    "api_version",
    "async_execution_thread",
    "backend_config",
    "batch_group_count",
    "body",
    "branch_computations",
    "called_computations",
    "calls",
    "channel_id",
    "collapsed_slice_dims",
    "condition",
    "constrain_layout",
    "control-predecessors",
    "all_reduce_id", // XLA 2018's cross-replica-sum: read with a note (notes.rs)
    "conv_kind",     // newer XLA than the oracle's: read with a note (notes.rs)
    "convolution_kind",
    "cross_program_prefetch_index",
    "custom_call_has_side_effect",
    "custom_call_schedule",
    "custom_call_target",
    "delta",
    "device_ids",
    "dim_labels",
    "dimensions",
    "direction",
    "distribution",
    "domain",
    "dynamic_slice_sizes",
    "epsilon",
    "exponent_bits",
    "false_computation",
    "feature_group_count",
    "feature_index",
    "fft_length",
    "fft_type",
    "frontend_attributes",
    "index",
    "index_vector_dim",
    "indices_are_sorted",
    "infeed_config",
    "inferred_dimension",
    "input_batching_dims",
    "inserted_window_dims",
    "iota_dimension",
    "is_associative",
    "is_composite",
    "is_cross_program_prefetch", // XLA 2020-22: read with a note (notes.rs)
    "is_host_transfer",
    "is_reverse",
    "is_stable",
    "k",
    "kind",
    "largest",
    "left_side",
    "lhs_batch_dims",
    "lhs_contracting_dims",
    "lhs_ragged_dims",
    "literal",
    "lower",
    "mantissa_bits",
    "metadata",
    "mode",
    "num_carries",
    "num_outputs",
    "offset_dims",
    "operand_batching_dims",
    "operand_layout_constraints",
    "operand_precision",
    "origin",
    "outfeed_config",
    "outfeed_shape",
    "output_to_operand_aliasing",
    "padding",
    "padding_type",
    "parameter_replication",
    "replica_group_ids", // XLA 2018: read with a note (notes.rs)
    "replica_groups",
    "result_accuracy",
    "rhs_batch_dims",
    "rhs_contracting_dims",
    "rhs_group_dims",
    "scatter",
    "scatter_dims_to_operand_dims",
    "scatter_indices_batching_dims",
    "schedule",
    "select",
    "sharding",
    "slice",
    "slice_sizes",
    "source_target_pairs",
    "sparsity",
    "sparsity_config",
    "start_index_map",
    "start_indices_batching_dims",
    "statistics",
    "to_apply",
    "transpose_a",
    "true_computation",
    "type",
    "unique_indices",
    "unit_diagonal",
    "update_window_dims",
    "use_global_device_ids",
    "window",
];

/// Opcodes that take `result_accuracy` (XLA's unary ops "with result accuracy").
const ACCURACY_OPS: &[&str] = &[
    "acos",
    "acosh",
    "asin",
    "asinh",
    "atanh",
    "exponential-minus-one",
    "log",
    "log-plus-one",
    "logistic",
    "sqrt",
    "cbrt",
    "rsqrt",
    "tanh",
    "erf",
    "sine",
    "sinh",
    "cosine",
    "cosh",
    "tan",
    "exponential",
];

const API_VERSIONS: &[&str] = &[
    "API_VERSION_UNSPECIFIED", // older printers' spelling, read with a note (notes.rs)
    "API_VERSION_ORIGINAL",
    "API_VERSION_STATUS_RETURNING",
    "API_VERSION_STATUS_RETURNING_UNIFIED",
    "API_VERSION_TYPED_FFI",
];

/// Check the attributes of one instruction; on failure, the index of the attribute at fault
/// (None: the instruction as a whole) and the message.
pub fn check(
    opcode: &str,
    attrs: &[(&str, std::borrow::Cow<str>)],
) -> Result<(), (Option<usize>, String)> {
    let has = |k: &str| attrs.iter().any(|(key, _)| *key == k);
    if let Some((_, required)) = REQUIRED.iter().find(|(op, _)| *op == opcode) {
        for key in *required {
            if !has(key) {
                return Err((None, format!("{opcode} requires the attribute {key}")));
            }
        }
    }
    if opcode == "conditional" {
        let branches = has("branch_computations");
        if branches && (has("true_computation") || has("false_computation")) {
            return Err((
                None,
                "conditional takes branch_computations or true/false_computation, not both".into(),
            ));
        }
        if !(branches || has("true_computation") && has("false_computation")) {
            return Err((None, "conditional requires branch_computations or true_computation and false_computation".into()));
        }
    }
    for (i, (key, value)) in attrs.iter().enumerate() {
        if !KNOWN.contains(key) {
            return Err((Some(i), format!("unexpected attribute {key} for {opcode}")));
        }
        let result = match *key {
            "window" => window(value),
            "replica_groups" | "device_ids" | "sharding" => iota_lists(value),
            "dim_labels" if opcode == "convolution" => dim_labels(value),
            "result_accuracy" => {
                if ACCURACY_OPS.contains(&opcode) {
                    result_accuracy(value)
                } else {
                    Err(format!("unexpected attribute result_accuracy for {opcode}"))
                }
            }
            "conv_kind" if opcode != "convolution" => {
                Err(format!("unexpected attribute conv_kind for {opcode}"))
            }
            "conv_kind" => {
                if !value.is_empty()
                    && value
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'_')
                {
                    Ok(())
                } else {
                    Err(format!("expects a convolution kind, but sees {value}"))
                }
            }
            "api_version" => {
                if API_VERSIONS.contains(&value.as_ref()) {
                    Ok(())
                } else {
                    Err(format!("invalid custom-call API version {value}"))
                }
            }
            _ => Ok(()),
        };
        result.map_err(|m| (Some(i), m))?;
    }
    Ok(())
}

fn ints(s: &str) -> bool {
    !s.is_empty() && s.split('x').all(|d| d.parse::<i64>().is_ok())
}

/// `{size=3x3 stride=1x1 pad=0_0x1_1 lhs_dilate=.. rhs_dilate=.. rhs_reversal=..}`
fn window(value: &str) -> Result<(), String> {
    let inner = value
        .strip_prefix('{')
        .and_then(|v| v.strip_suffix('}'))
        .ok_or("window must be {...}")?;
    for field in inner.split_whitespace() {
        let (key, v) = field
            .split_once('=')
            .ok_or_else(|| format!("malformed window field {field}"))?;
        let ok = match key {
            "size" | "stride" | "lhs_dilate" | "rhs_dilate" | "rhs_reversal" => ints(v),
            "pad" => v.split('x').all(|d| {
                let parts: Vec<&str> = d.split('_').collect();
                parts.len() == 2 && parts.iter().all(|p| p.parse::<i64>().is_ok())
            }),
            _ => return Err(format!("unexpected window field {key}")),
        };
        if !ok {
            return Err(format!(
                "malformed window {key}={v} (pad is low_high per dimension, joined by 'x')"
            ));
        }
    }
    Ok(())
}

/// `b01f_01io->b01f`: each part names batch/feature (or input/output) once and spatial
/// dimensions 0..N-1 once, with the same N in all three.
fn dim_labels(value: &str) -> Result<(), String> {
    let (lhs, rest) = value
        .split_once('_')
        .ok_or("dim_labels must be lhs_rhs->out")?;
    let (rhs, out) = rest
        .split_once("->")
        .ok_or("dim_labels must be lhs_rhs->out")?;
    let spatial = |part: &str, letters: [char; 2], what: &str| -> Result<usize, String> {
        let mut digits = Vec::new();
        for letter in letters {
            if part.chars().filter(|c| *c == letter).count() != 1 {
                return Err(format!(
                    "expects one '{letter}' in {what} dimension numbers {part}"
                ));
            }
        }
        for c in part.chars() {
            match c {
                '0'..='9' => digits.push(c as usize - '0' as usize),
                c if letters.contains(&c) => {}
                '?' => {}
                _ => {
                    return Err(format!(
                        "unexpected '{c}' in {what} dimension numbers {part}"
                    ))
                }
            }
        }
        let mut sorted = digits.clone();
        sorted.sort_unstable();
        sorted.dedup();
        if sorted.len() != digits.len() {
            return Err(format!("expects unique {what} dimension numbers in {part}"));
        }
        if sorted.iter().enumerate().any(|(i, d)| i != *d) {
            return Err(format!(
                "expects [0, {}) in {what} dimension numbers {part}",
                digits.len()
            ));
        }
        Ok(digits.len())
    };
    let a = spatial(lhs, ['b', 'f'], "lhs")?;
    let b = spatial(rhs, ['i', 'o'], "rhs")?;
    let c = spatial(out, ['b', 'f'], "output")?;
    if a != b || b != c {
        return Err(format!("input, kernel and output must have the same number of spatial dimensions: {a}, {b}, {c}"));
    }
    Ok(())
}

/// `{mode=default}` / `{mode=highest}` or `{tolerance={atol=.. rtol=.. ulps=..}}`.
fn result_accuracy(value: &str) -> Result<(), String> {
    let inner = value
        .strip_prefix('{')
        .and_then(|v| v.strip_suffix('}'))
        .ok_or("result_accuracy must be {...}")?;
    let inner = inner.trim();
    if let Some(mode) = inner.strip_prefix("mode=") {
        return match mode.trim().to_ascii_lowercase().as_str() {
            "default" | "highest" => Ok(()),
            other => Err(format!("unknown result accuracy mode {other}")),
        };
    }
    if let Some(tolerance) = inner.strip_prefix("tolerance=") {
        let t = tolerance.trim();
        let fields = t
            .strip_prefix('{')
            .and_then(|v| v.strip_suffix('}'))
            .ok_or("tolerance must be {...}")?;
        for field in fields.split([',', ' ']).filter(|f| !f.is_empty()) {
            let (key, v) = field
                .split_once('=')
                .ok_or_else(|| format!("malformed tolerance field {field}"))?;
            if !matches!(key, "atol" | "rtol" | "ulps") || v.parse::<f64>().is_err() {
                return Err(format!("invalid tolerance field {field}"));
            }
        }
        return Ok(());
    }
    match inner.split_once('=') {
        Some((key, _)) if key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') => {
            Err(format!("invalid attribute name: {key}"))
        }
        _ => Err("expects attribute name in result_accuracy".into()),
    }
}

/// Every iota device list in a value (`[2,2]<=[4]`, `[2,1,2]<=[2,2]T(1,0)`): as many devices on
/// both sides, none of size 0, and `T(...)` a permutation of the reshape's dimensions.
fn iota_lists(value: &str) -> Result<(), String> {
    let mut rest = value;
    while let Some(at) = rest.find("]<=[") {
        let before = &rest[..at];
        let dims_text = &before[before.rfind('[').map(|i| i + 1).unwrap_or(0)..];
        let after = &rest[at + 4..];
        let close = after
            .find(']')
            .ok_or_else(|| format!("unclosed iota reshape in {value}"))?;
        let reshape_text = &after[..close];
        let mut tail = &after[close + 1..];
        let parse = |t: &str| -> Result<Vec<u64>, String> {
            t.split(',')
                .map(|d| {
                    d.trim()
                        .parse::<u64>()
                        .map_err(|_| format!("malformed iota list {value}"))
                })
                .collect()
        };
        let dims = parse(dims_text)?;
        let reshape = parse(reshape_text)?;
        let product = |v: &[u64]| v.iter().try_fold(1u64, |a, d| a.checked_mul(*d));
        let (Some(n_dims), Some(n_reshape)) = (product(&dims), product(&reshape)) else {
            return Err(format!("iota list {value} is too large"));
        };
        if n_dims != n_reshape || n_dims == 0 {
            return Err(format!(
                "iota list [{dims_text}]<=[{reshape_text}]: {n_dims} slots for {n_reshape} devices"
            ));
        }
        if let Some(perm_text) = tail.strip_prefix("T(") {
            let end = perm_text
                .find(')')
                .ok_or_else(|| format!("unclosed T(...) in {value}"))?;
            let mut perm = parse(&perm_text[..end])?;
            perm.sort_unstable();
            if perm.iter().enumerate().any(|(i, p)| *p != i as u64) || perm.len() != reshape.len() {
                return Err(format!(
                    "iota list {value}: T({}) is not a permutation of its reshape",
                    &perm_text[..end]
                ));
            }
            tail = &perm_text[end + 1..];
        }
        rest = tail;
    }
    Ok(())
}
