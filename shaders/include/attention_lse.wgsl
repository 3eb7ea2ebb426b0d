// Finite stand-ins for -inf in attention row statistics, shared by the forward that writes a
// row's logsumexp and by attention_combine that merges them: backends may assume no infinities,
// and exp(NEG - x) is exactly 0. A logsumexp at or below MASKED means "this row saw no key".
const NEG: f32 = -1e30;
const MASKED: f32 = -5e29;
