/**
 * Types shared by the device and the recorder. They live apart so that recorder.ts needs nothing
 * from device.ts, which owns a Recorder (an import circle otherwise).
 */

/** Buffer bindings of one dispatch: a whole buffer or a byte range of it. */
export type Binding = GPUBuffer | { buffer: GPUBuffer; offset?: number; size?: number };
