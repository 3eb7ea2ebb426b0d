/**
 * Every `shaders/*.wgsl` by name. Empty in Deno (which reads the files on demand); web/build.ts
 * replaces this module's body with the inlined sources when it bundles the page.
 */
export const SHADERS: Record<string, string> = {};
