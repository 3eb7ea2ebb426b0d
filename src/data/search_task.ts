/**
 * The synthetic knowledge-base task (`deno task data --task search`, Search-R1 style): made-up
 * people, each described by one corpus passage (`{id, contents}`, first line the title, as
 * Search-R1's wiki corpus), and questions about them that nothing but a look-up answers (the
 * names and facts are drawn at random, so no model knows them). Answers are scored by
 * Search-R1's exact match on `<answer>...</answer>` (data_source `searchR1_synth`); validation
 * questions are about people the training questions never mention.
 */
import { SEARCH_SYNTH_DATA_SOURCE } from "../reward/mod.ts";
import { mulberry32, randInt } from "../tensor/mod.ts";
import type { Row } from "./parquet.ts";

/** The instruction before each question (lowercase: the tiny tokenizer has no capitals). */
export const SEARCH_INSTRUCTION = "answer the question. call the search tool to look it up, " +
  "then write the answer inside <answer> and </answer>.\nquestion: ";

const SYLLABLES = ["ka", "lo", "mi", "ren", "tas", "vo", "zel", "dor", "pim", "sul", "ne", "bar"];
const ANIMALS = ["cat", "dog", "goat", "owl", "fox", "crab", "horse", "frog"];
const COLORS = ["red", "blue", "green", "yellow", "purple", "orange", "white", "black"];
const JOBS = ["baker", "pilot", "farmer", "doctor", "painter", "sailor", "teacher", "miner"];

/** Question templates: the question, the passage sentence and which fact answers it. */
const FACTS = [
  { q: (n: string) => `where does ${n} live?`, s: (n: string, v: string) => `${n} lives in ${v}.` },
  {
    q: (n: string) => `what animal does ${n} keep?`,
    s: (n: string, v: string) => `${n} keeps a ${v}.`,
  },
  {
    q: (n: string) => `what color does ${n} like?`,
    s: (n: string, v: string) => `${n} likes the color ${v}.`,
  },
  { q: (n: string) => `what is the job of ${n}?`, s: (n: string, v: string) => `${n} is a ${v}.` },
];

export interface SearchTaskOptions {
  trainSize: number;
  valSize: number;
  seed?: number;
}

export interface SearchTask {
  corpus: { id: string; contents: string }[];
  train: Row[];
  val: Row[];
}

export function generateSearchTask(o: SearchTaskOptions): SearchTask {
  const rand = mulberry32(o.seed ?? 1);
  const pick = <T>(xs: readonly T[]) => xs[randInt(rand, 0, xs.length - 1)];
  const word = (k: number) => Array.from({ length: k }, () => pick(SYLLABLES)).join("");
  const per = FACTS.length;
  const people = Math.ceil(o.trainSize / per) + Math.ceil(o.valSize / per);
  if (people > 4000) throw new Error(`asked for ${people} people; at most 4000 (16000 questions)`);
  const names = new Set<string>();
  const corpus: SearchTask["corpus"] = [];
  const questions: { question: string; answer: string; person: number }[] = [];
  while (names.size < people) {
    const name = `${word(2)} ${word(2)}`;
    if (names.has(name)) continue;
    names.add(name);
    const values = [word(3), pick(ANIMALS), pick(COLORS), pick(JOBS)];
    const text = FACTS.map((f, i) => f.s(name, values[i])).join(" ");
    corpus.push({ id: String(corpus.length), contents: `${name}\n${text}` });
    FACTS.forEach((f, i) =>
      questions.push({ question: f.q(name), answer: values[i], person: corpus.length - 1 })
    );
  }
  const cut = Math.ceil(o.trainSize / per);
  const row = (
    q: { question: string; answer: string },
    split: string,
    index: number,
  ): Row => {
    const groundTruth = { target: [q.answer] };
    return {
      data_source: SEARCH_SYNTH_DATA_SOURCE,
      agent_name: "tool_agent",
      prompt: [{ role: "user", content: SEARCH_INSTRUCTION + q.question }],
      ability: "fact-reasoning",
      reward_model: { style: "rule", ground_truth: groundTruth },
      extra_info: {
        split,
        index,
        question: q.question,
        tools_kwargs: {
          search: {
            create_kwargs: {
              ground_truth: groundTruth,
              question: q.question,
              data_source: SEARCH_SYNTH_DATA_SOURCE,
            },
          },
        },
      },
    };
  };
  const train = questions.filter((q) => q.person < cut).slice(0, o.trainSize)
    .map((q, i) => row(q, "train", i));
  const val = questions.filter((q) => q.person >= cut).slice(0, o.valSize)
    .map((q, i) => row(q, "test", i));
  return { corpus, train, val };
}
