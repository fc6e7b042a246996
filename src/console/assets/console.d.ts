// console.js is embedded as text (src/console/assets.ts).
declare const text: string;
export default text;
