//! Spellings that an older (or a vendor's) XLA printer wrote and that today's XLA parser refuses.
//! The reader takes them as the printer meant them and says so in a note (never an error): a dump
//! is read as the XLA that wrote it read it. Each note's text names the spelling, what it is read
//! as, and who wrote it; `docs/reading.md` lists them with the dumps they were found in.

/// `custom-call ..., api_version=API_VERSION_UNSPECIFIED`: the proto enum's zero value, printed
/// by XLA builds before the parser refused it (torch-neuronx / Trainium dumps carry it on every
/// custom-call). XLA treated it as the default, API_VERSION_ORIGINAL.
pub const API_VERSION_UNSPECIFIED: &str = "custom-call api_version=API_VERSION_UNSPECIFIED is \
     an older XLA's spelling (torch-neuronx prints it; today's XLA refuses it): read as \
     API_VERSION_ORIGINAL";

/// `convolution ..., conv_kind=fprop`: printed by XLA newer than the jaxlib the conformance
/// oracle pins (hlo_parser_test.cc ConvolutionWithKind), refused by that jaxlib.
pub const CONV_KIND: &str = "convolution conv_kind= is a newer XLA's attribute (jaxlib 0.10.2 \
     refuses it): read and kept as written";

/// An async-update whose shape binds the output its async-start left as `()`: newer XLA parses
/// it (hlo_diff's tests), jaxlib 0.10.2 refuses it.
pub const LATE_BOUND_ASYNC_UPDATE: &str = "async-update binds the output its async-start left \
     empty (newer XLA reads it; jaxlib 0.10.2 refuses it): read with the async-update's shape";

/// `cross-replica-sum(...)`: all-reduce's opcode before XLA renamed it (2018-19 text).
pub const CROSS_REPLICA_SUM: &str = "cross-replica-sum is all-reduce's name in XLA before 2019 \
     (today's XLA refuses it): read as all-reduce";

/// `less-than(a, b)` and the other comparison opcodes of XLA before 2019 (one opcode per
/// direction: hlo_opcode.h's kEq..kNe, until `compare` took a direction=).
pub const OLD_COMPARISON: &str = "less-than / greater-than / equal-to / not-equal-to (and their \
     -or-equal-to forms) are XLA's comparison opcodes before 2019 (today's XLA refuses them): read as \
     compare with that direction";

/// The direction `compare` takes for a comparison opcode of XLA before 2019.
pub fn old_comparison(opcode: &str) -> Option<&'static str> {
    match opcode {
        "equal-to" => Some("EQ"),
        "not-equal-to" => Some("NE"),
        "greater-than-or-equal-to" => Some("GE"),
        "greater-than" => Some("GT"),
        "less-than-or-equal-to" => Some("LE"),
        "less-than" => Some("LT"),
        _ => None,
    }
}

/// `constant(f32[2] {1, 2})`: a literal that repeats its shape, printed by XLA before 2019.
pub const SHAPED_CONSTANT: &str = "a constant whose literal repeats its shape (XLA before 2019; \
     today's XLA refuses it): read without the repeated shape";

/// `copy-start(...), is_cross_program_prefetch=true`: XLA 2020-22, now cross_program_prefetch_index.
pub const CROSS_PROGRAM_PREFETCH: &str = "copy-start is_cross_program_prefetch=true (XLA 2020-22; \
     today's XLA refuses it): read; today it is written cross_program_prefetch_index=0";

/// `all_reduce_id=N` / `replica_group_ids={...}` on a cross-replica-sum (XLA 2018).
pub const OLD_ALL_REDUCE_ATTRIBUTE: &str = "all_reduce_id= / replica_group_ids= are attributes of \
     XLA 2018's cross-replica-sum (today's XLA refuses them): read and kept as written";

/// The note for an attribute, when its spelling is an old one.
pub fn old_attribute(opcode: &str, key: &str, value: &str) -> Option<&'static str> {
    match (opcode, key, value) {
        ("custom-call", "api_version", "API_VERSION_UNSPECIFIED") => Some(API_VERSION_UNSPECIFIED),
        ("convolution", "conv_kind", _) => Some(CONV_KIND),
        ("copy-start", "is_cross_program_prefetch", _) => Some(CROSS_PROGRAM_PREFETCH),
        ("all-reduce", "all_reduce_id" | "replica_group_ids", _) => Some(OLD_ALL_REDUCE_ATTRIBUTE),
        _ => None,
    }
}
