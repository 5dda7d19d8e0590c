//! Instruction attributes XLA requires and knows, per opcode, and which value grammar checks
//! each (attr_values.rs holds the grammars; custom-call API versions and convolution kinds are
//! checked here).

use crate::parse::attr_values::{dim_labels, iota_lists, result_accuracy, window};

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
