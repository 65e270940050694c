// A service that writes its table directly with @azure/data-tables, as
// teams do before they adopt tablejournal (docs/adopting.md), and a
// reader that compares two tables as this SDK sees them.
//
//   node legacy.cjs write <azure-tables-connection-string> <table> <rows>
//   node legacy.cjs compare <azure-tables-connection-string> <source> <adopted>
//   node legacy.cjs read <azure-tables-connection-string> <table> [<pk>/<rk> ...]
//
// read is the service's own reader, unchanged by adoption into the plain
// layout: it lists the whole table and each partition, and gets every row
// it listed (and each <pk>/<rk> named, absent or not) by its keys, and
// prints the service's properties of each (system columns counted apart).
//
// It prints one JSON line per step; examples/node's Go test runs it around
// replay adopt.
const { TableClient, odata } = require("@azure/data-tables");

const print = (step, v) => console.log(JSON.stringify({ step, ...v }));
const client = (conn, table) => TableClient.fromConnectionString(conn, table, { allowInsecureConnection: true });

async function write(conn, table, n) {
  const c = client(conn, table);
  await c.createTable();
  for (let i = 0; i < n; i++) {
    await c.upsertEntity({
      partitionKey: `customer-${i % 4}`,
      rowKey: `order-${i}`,
      status: ["new", "paid", "shipped"][i % 3],
      note: "",
      paid: i % 2 === 0,
      qty: i,
      big: BigInt(2 ** 53) + BigInt(i), // Edm.Int64 beyond 2^53
      price: i + 0.25,
      whole: { value: String(i), type: "Double" }, // a whole-number Double
      placed: { value: `2026-11-29T10:00:00.${String(1234567 + i).padStart(7, "0")}Z`, type: "DateTime" },
      ref: { value: `0f8fad5b-d9cb-469f-a165-${String(i).padStart(12, "0")}`, type: "Guid" },
      blob: new Uint8Array([i & 0xff, 0, 0xff]),
    }, "Replace");
  }
  print("write", { rows: n });
}

// rows lists a table as this SDK reads it with its types (EDM objects),
// keyed by partition and row key; only rows whose key starts with prefix,
// the prefix dropped, and no system columns.
async function rows(conn, table, prefix) {
  const out = new Map();
  for await (const e of client(conn, table).listEntities({ disableTypeConversion: true })) {
    if (!e.rowKey.startsWith(prefix)) continue;
    const props = Object.keys(e)
      .filter((k) => !["etag", "timestamp", "partitionKey", "rowKey"].includes(k) && !k.startsWith("_"))
      .sort()
      .map((k) => `${k}=${JSON.stringify(e[k])}`);
    out.set(`${e.partitionKey}/${e.rowKey.slice(prefix.length)}`, props.join(" "));
  }
  return out;
}

async function compare(conn, source, adopted) {
  const src = await rows(conn, source, "");
  const got = await rows(conn, adopted, "tip:");
  const differences = [];
  for (const [k, v] of src) if (got.get(k) !== v) differences.push(k);
  for (const k of got.keys()) if (!src.has(k)) differences.push(k);
  print("compare", { source: src.size, adopted: got.size, differences });
}

// props is a row's own properties as this SDK reads them with their types,
// one string; system columns (_…) are counted in sys.
function props(e, sys) {
  const own = Object.keys(e)
    .filter((k) => !["etag", "timestamp", "partitionKey", "rowKey", "odata.metadata"].includes(k))
    .sort();
  sys.n += own.filter((k) => k.startsWith("_")).length;
  return own.filter((k) => !k.startsWith("_")).map((k) => `${k}=${JSON.stringify(e[k])}`).join(" ");
}

async function read(conn, table, keys) {
  const c = client(conn, table);
  const sys = { n: 0 };
  const all = {};
  for await (const e of c.listEntities({ disableTypeConversion: true })) {
    all[`${e.partitionKey}/${e.rowKey}`] = props(e, sys);
  }
  const partitions = {};
  for (const k of Object.keys(all)) partitions[k.slice(0, k.indexOf("/"))] = {};
  for (const pk of Object.keys(partitions)) {
    const q = { queryOptions: { filter: odata`PartitionKey eq ${pk}` }, disableTypeConversion: true };
    for await (const e of c.listEntities(q)) partitions[pk][`${e.partitionKey}/${e.rowKey}`] = props(e, sys);
  }
  const gets = {};
  for (const k of [...Object.keys(all), ...keys]) {
    const i = k.indexOf("/");
    try {
      gets[k] = props(await c.getEntity(k.slice(0, i), k.slice(i + 1), { disableTypeConversion: true }), sys);
    } catch (err) {
      if (err.statusCode !== 404) throw err;
      gets[k] = null;
    }
  }
  print("read", { all, partitions, gets, systemColumns: sys.n });
}

async function main() {
  const [mode, conn, a, b, ...rest] = process.argv.slice(2);
  if (mode === "write") await write(conn, a, Number(b));
  else if (mode === "compare") await compare(conn, a, b);
  else if (mode === "read") await read(conn, a, [b, ...rest].filter(Boolean));
  else throw new Error(`unknown mode ${mode}`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
