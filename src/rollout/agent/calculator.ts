/**
 * Exact arithmetic for the `calculator` tool: a recursive-descent parser over integers and
 * decimals, evaluated as fractions of BigInts, so 0.1 + 0.2 is 0.3 and 2^100 is every digit.
 * Grammar (usual precedence, `^` right-associative and above unary minus as in maths: -2^2 = -4):
 *
 *   expr   := term (('+' | '-') term)*
 *   term   := unary (('*' | '/' | '%') unary)*
 *   unary  := ('+' | '-') unary | power
 *   power  := atom ('^' | '**') unary | atom
 *   atom   := number | '(' expr ')'
 *
 * A result that is a terminating decimal prints as one; any other prints as a reduced fraction.
 */

export class CalculatorError extends Error {
  override name = "CalculatorError";
}

/** A fraction num/den with den > 0 and gcd 1. */
interface Q {
  num: bigint;
  den: bigint;
}

const abs = (x: bigint) => (x < 0n ? -x : x);
function gcd(a: bigint, b: bigint): bigint {
  a = abs(a);
  b = abs(b);
  while (b) [a, b] = [b, a % b];
  return a;
}
function q(num: bigint, den = 1n): Q {
  if (den === 0n) throw new CalculatorError("division by zero");
  if (den < 0n) [num, den] = [-num, -den];
  const g = gcd(num, den) || 1n;
  return { num: num / g, den: den / g };
}

/** Longest exponent accepted: 2^10000 has about 3000 digits, enough for any tool answer. */
const MAX_EXPONENT = 10000n;

function power(base: Q, exp: Q): Q {
  if (exp.den !== 1n) throw new CalculatorError("only integer exponents are exact");
  if (abs(exp.num) > MAX_EXPONENT) throw new CalculatorError(`exponent over ${MAX_EXPONENT}`);
  const e = abs(exp.num);
  const r = q(base.num ** e, base.den ** e);
  return exp.num < 0n ? q(r.den, r.num) : r;
}

class Parser {
  private pos = 0;
  constructor(private readonly src: string) {}

  parse(): Q {
    const v = this.expr();
    this.skip();
    if (this.pos < this.src.length) this.fail(`unexpected "${this.src[this.pos]}"`);
    return v;
  }

  private fail(why: string): never {
    throw new CalculatorError(`${why} at position ${this.pos} of "${this.src}"`);
  }
  private skip(): void {
    while (this.pos < this.src.length && /\s/.test(this.src[this.pos])) this.pos++;
  }
  private eat(tok: string): boolean {
    this.skip();
    if (this.src.startsWith(tok, this.pos)) {
      this.pos += tok.length;
      return true;
    }
    return false;
  }

  private expr(): Q {
    let v = this.term();
    for (;;) {
      if (this.eat("+")) v = add(v, this.term());
      else if (this.eat("-")) v = add(v, neg(this.term()));
      else return v;
    }
  }
  private term(): Q {
    let v = this.unary();
    for (;;) {
      this.skip();
      if (this.src.startsWith("**", this.pos)) return v; // power binds at the unary level
      if (this.eat("*")) v = mul(v, this.unary());
      else if (this.eat("/")) v = div(v, this.unary());
      else if (this.eat("%")) v = mod(v, this.unary());
      else return v;
    }
  }
  private unary(): Q {
    if (this.eat("-")) return neg(this.unary());
    if (this.eat("+")) return this.unary();
    const base = this.atom();
    if (this.eat("**") || this.eat("^")) return power(base, this.unary());
    return base;
  }
  private atom(): Q {
    if (this.eat("(")) {
      const v = this.expr();
      if (!this.eat(")")) this.fail('missing ")"');
      return v;
    }
    this.skip();
    const m = /^(\d+(?:\.\d*)?|\.\d+)/.exec(this.src.slice(this.pos));
    if (!m) {
      this.fail(this.pos < this.src.length ? `unexpected "${this.src[this.pos]}"` : "end of input");
    }
    this.pos += m[0].length;
    const [int, frac = ""] = m[0].split(".");
    return q(BigInt((int || "0") + frac), 10n ** BigInt(frac.length));
  }
}

const add = (a: Q, b: Q) => q(a.num * b.den + b.num * a.den, a.den * b.den);
const neg = (a: Q) => q(-a.num, a.den);
const mul = (a: Q, b: Q) => q(a.num * b.num, a.den * b.den);
const div = (a: Q, b: Q) => {
  if (b.num === 0n) throw new CalculatorError("division by zero");
  return q(a.num * b.den, a.den * b.num);
};
/** Remainder with the sign of the dividend (as JavaScript's and C's %). */
const mod = (a: Q, b: Q) => {
  if (b.num === 0n) throw new CalculatorError("modulo by zero");
  const n = a.num * b.den, d = b.num * a.den; // a/b = n/d
  const whole = n / d; // truncated toward zero
  return add(a, neg(mul(b, q(whole))));
};

/** The exact value as a decimal when it terminates (den = 2^i 5^j), else as `num/den`. */
function format(v: Q): string {
  let d = v.den, twos = 0, fives = 0;
  while (d % 2n === 0n) [d, twos] = [d / 2n, twos + 1];
  while (d % 5n === 0n) [d, fives] = [d / 5n, fives + 1];
  if (d !== 1n) return `${v.num}/${v.den}`;
  const places = Math.max(twos, fives);
  const scaled = v.num * (10n ** BigInt(places)) / v.den;
  if (places === 0) return scaled.toString();
  const digits = abs(scaled).toString().padStart(places + 1, "0");
  const sign = scaled < 0n ? "-" : "";
  return `${sign}${digits.slice(0, -places)}.${digits.slice(-places)}`;
}

/** Evaluates an arithmetic expression exactly; throws CalculatorError on bad input. */
export function calculate(expression: string): string {
  if (expression.length > 1000) throw new CalculatorError("expression longer than 1000 characters");
  return format(new Parser(expression).parse());
}
