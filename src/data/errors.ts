/** A data problem, naming the file and, where known, the row and column. */
export class DataError extends Error {
  constructor(
    readonly file: string,
    message: string,
    readonly row?: number,
    readonly column?: string,
  ) {
    const where = [
      file,
      row !== undefined ? `row ${row}` : "",
      column !== undefined ? `column "${column}"` : "",
    ].filter(Boolean).join(", ");
    super(`${where}: ${message}`);
    this.name = "DataError";
  }
}
