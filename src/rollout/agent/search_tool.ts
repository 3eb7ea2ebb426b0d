/**
 * Search-R1's search tool (verl's SearchTool): `query_list` -> the top-k passages of each query,
 * formatted as verl does ("Doc i (Title: <first line>)\n<rest>", queries joined by "\n---\n",
 * wrapped as JSON {"result": ...}). Passages come from an in-process BM25 index over a local
 * JSONL corpus (`config.corpus_path`), or from a Search-R1 retrieval server
 * (`config.retrieval_service_url`: POST {queries, topk, return_scores} ->
 * {result: [[{document: {contents}, score}]]}).
 */
import { Bm25Index, type Hit, parseCorpus } from "./bm25.ts";
import { StatefulTool, type ToolResult, type ToolSchema } from "./types.ts";

type Retrieve = (queries: string[], topk: number) => Promise<{ contents: string }[][]>;

/** Formats one query's passages as verl's search tool does. */
export function passagesText(docs: { contents: string }[]): string {
  return docs.map((d, i) => {
    const [title, ...rest] = d.contents.split("\n");
    return `Doc ${i + 1} (Title: ${title})\n${rest.join("\n")}\n\n`;
  }).join("").trim();
}

/** Asks a Search-R1 retrieval server; an HTTP or shape error is thrown with the URL. */
export function httpRetriever(url: string, timeoutS: number): Retrieve {
  return async (queries, topk) => {
    const res = await fetch(url, {
      method: "POST",
      headers: { "Content-Type": "application/json", Accept: "application/json" },
      body: JSON.stringify({ queries, topk, return_scores: true }),
      signal: AbortSignal.timeout(timeoutS * 1000),
    });
    if (!res.ok) throw new Error(`${url}: HTTP ${res.status}`);
    const body = await res.json() as { result?: unknown };
    if (!Array.isArray(body.result)) throw new Error(`${url}: the reply has no "result" list`);
    return body.result.map((docs: unknown) =>
      (Array.isArray(docs) ? docs : []).map((d) => {
        const doc = (d as { document?: { contents?: unknown } })?.document ?? d;
        return { contents: String((doc as { contents?: unknown }).contents ?? "") };
      })
    );
  };
}

export function bm25Retriever(index: Bm25Index): Retrieve {
  return (queries, topk) =>
    Promise.resolve(queries.map((q) => index.search(q, topk).map((h: Hit) => h.passage)));
}

export class SearchTool extends StatefulTool<string[]> {
  static readonly defaultSchema: ToolSchema = {
    type: "function",
    function: {
      name: "search",
      description: "Searches for relevant passages for each query.",
      parameters: {
        type: "object",
        properties: {
          query_list: { type: "array", items: { type: "string" }, description: "Queries" },
        },
        required: ["query_list"],
      },
    },
  };

  constructor(schema: ToolSchema, private readonly retrieve: Retrieve, readonly topk: number) {
    super(schema);
  }

  /** From a YAML entry's `config`: `corpus_path` or `retrieval_service_url`, `topk` (3), `timeout`. */
  static fromConfig(c: Record<string, unknown>, schema: ToolSchema | null, at: string): SearchTool {
    const topk = Number(c.topk ?? 3);
    if (!Number.isInteger(topk) || topk < 1) {
      throw new Error(`${at}.config.topk: a positive integer`);
    }
    let retrieve: Retrieve;
    if (typeof c.corpus_path === "string") {
      const text = Deno.readTextFileSync(c.corpus_path);
      retrieve = bm25Retriever(new Bm25Index(parseCorpus(text, c.corpus_path)));
    } else if (typeof c.retrieval_service_url === "string" && c.retrieval_service_url !== "") {
      retrieve = httpRetriever(c.retrieval_service_url, Number(c.timeout ?? 30));
    } else {
      throw new Error(
        `${at}.config: the search tool needs corpus_path (a JSONL file of {id, contents}) or ` +
          "retrieval_service_url (a Search-R1 retrieval server)",
      );
    }
    return new SearchTool(schema ?? SearchTool.defaultSchema, retrieve, topk);
  }

  protected initial(): string[] {
    return [];
  }

  protected async run(results: string[], args: Record<string, unknown>): Promise<ToolResult> {
    const queries = args.query_list;
    if (!Array.isArray(queries) || queries.length === 0) {
      throw new Error("'query_list' is missing, empty, or not a list");
    }
    const found = await this.retrieve(queries.map(String), this.topk);
    const text = found.length && found.some((d) => d.length)
      ? found.map(passagesText).join("\n---\n")
      : "No search results found.";
    results.push(text);
    return {
      text: JSON.stringify({ result: text }),
      metrics: { query_count: queries.length, total_results: found.flat().length },
    };
  }
}
