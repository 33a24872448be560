// Compiles DevUSDC.sol with solcjs (npm "solc", pinned in package.json) and
// writes DevUSDC.abi.json and DevUSDC.bin-runtime (hex of the deployed code,
// which the devchain places in its genesis). Run from this directory:
//
//   npm ci && node build.js
//
// The output is committed; a test checks it matches the source's build when
// solc is installed.
const fs = require("fs");
const solc = require("solc");

const input = {
  language: "Solidity",
  sources: { "DevUSDC.sol": { content: fs.readFileSync(__dirname + "/DevUSDC.sol", "utf8") } },
  settings: {
    optimizer: { enabled: true, runs: 200 },
    evmVersion: "cancun",
    metadata: { bytecodeHash: "none" },
    outputSelection: { "*": { DevUSDC: ["abi", "evm.deployedBytecode.object"] } },
  },
};
const out = JSON.parse(solc.compile(JSON.stringify(input)));
for (const e of out.errors || []) {
  console.error(e.formattedMessage);
  if (e.severity === "error") process.exit(1);
}
const c = out.contracts["DevUSDC.sol"].DevUSDC;
const check = process.argv[2] === "--check";
const abi = JSON.stringify(c.abi, null, 2) + "\n";
const bin = c.evm.deployedBytecode.object + "\n";
if (check) {
  const same = fs.readFileSync(__dirname + "/DevUSDC.abi.json", "utf8") === abi &&
    fs.readFileSync(__dirname + "/DevUSDC.bin-runtime", "utf8") === bin;
  if (!same) { console.error("DevUSDC.abi.json or DevUSDC.bin-runtime is stale: run node build.js"); process.exit(1); }
} else {
  fs.writeFileSync(__dirname + "/DevUSDC.abi.json", abi);
  fs.writeFileSync(__dirname + "/DevUSDC.bin-runtime", bin);
}
console.error("solc " + solc.version() + (check ? ": up to date" : ": wrote DevUSDC.abi.json, DevUSDC.bin-runtime"));
