/**
 * Every `shaders/*.wgsl` by name, includes expanded. Empty in Deno (which reads the files on
 * demand); web/build.ts replaces this module's body with `shaderSource(name)` of every shader when
 * it bundles the page.
 */
export const SHADERS: Record<string, string> = {};
