/**
 * Name -> function registries, in the manner of verl's `register_adv_est` /
 * `register_policy_loss`: config strings select an implementation, and a typo
 * fails loudly with the list of valid names instead of silently falling back.
 *
 * @module
 */

/** A string-keyed registry whose lookups fail with the valid names. */
export class Registry<F> {
  readonly #items = new Map<string, F>();

  /** @param kind what the names denote, used in error messages ("advantage estimator"). */
  constructor(readonly kind: string) {}

  /** Adds `fn` under `name`; registering a different function twice is an error. */
  register(name: string, fn: F): F {
    const prev = this.#items.get(name);
    if (prev !== undefined && prev !== fn) {
      throw new Error(`${this.kind} "${name}" is already registered`);
    }
    this.#items.set(name, fn);
    return fn;
  }

  /** Returns the function for `name` or throws, listing every valid name. */
  get(name: string): F {
    const fn = this.#items.get(name);
    if (fn === undefined) {
      throw new Error(
        `unknown ${this.kind} "${name}"; valid names: ${this.names().join(", ")}`,
      );
    }
    return fn;
  }

  /** Whether `name` is registered. */
  has(name: string): boolean {
    return this.#items.has(name);
  }

  /** Registered names in registration order. */
  names(): string[] {
    return [...this.#items.keys()];
  }
}
