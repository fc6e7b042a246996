// Files the console embeds as text (`with { type: "text" }`), typed as their contents.
declare module "*.css" {
  const text: string;
  export default text;
}
declare module "uplot/dist/uPlot.iife.min.js" {
  const text: string;
  export default text;
}
