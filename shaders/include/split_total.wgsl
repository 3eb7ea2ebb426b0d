// The sum of a split-K product's partials at element i: part [splits, size] (the includer's
// `part` binding), four splits loaded per round and then added in split order, so the sum is the
// plain loop's and never depends on scheduling. With tens of splits a one-at-a-time loop would
// wait on each load in turn.

fn split_total(i: u32, size: u32, splits: u32) -> f32 {
  var s = 0.0;
  var z = 0u;
  for (; z + 4u <= splits; z += 4u) {
    let a = part[z * size + i];
    let b = part[(z + 1u) * size + i];
    let c = part[(z + 2u) * size + i];
    let d = part[(z + 3u) * size + i];
    s = (((s + a) + b) + c) + d;
  }
  for (; z < splits; z++) { s += part[z * size + i]; }
  return s;
}
