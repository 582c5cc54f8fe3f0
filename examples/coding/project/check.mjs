import { add, sub } from "./math.mjs";
if (add(2, 3) !== 5 || sub(5, 3) !== 2) { console.log("FAIL add(2, 3) =", add(2, 3)); process.exit(1); }
console.log("PASS");
