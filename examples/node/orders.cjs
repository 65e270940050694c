// The orders flow of examples/orders from Node, with nats.js and
// @azure/data-tables only: publish commands as JSON, wait for their
// outcomes, read current rows from Azure Tables (or Azurite), follow the
// change feed with a durable consumer.
//
//   node orders.cjs <nats-url> <azure-tables-connection-string> <customer>
//
// It prints one JSON line per step; examples/node's Go test checks them.
const { connect, headers, AckPolicy } = require("nats");
const { TableClient, odata } = require("@azure/data-tables");
const { randomUUID } = require("node:crypto");

const b64url = (s) => Buffer.from(s, "utf8").toString("base64url"); // unpadded, RFC 4648 §5
// Table names are case-insensitive: subjects carry the table in lower case,
// so that one table has one subject whatever its spelling (docs/SPEC.md §3).
const table = "Orders";
const tableToken = table.toLowerCase();
const print = (step, v) => console.log(JSON.stringify({ step, ...v }));

async function main() {
  const [natsURL, tablesConn, customer] = process.argv.slice(2);
  const nc = await connect({ servers: natsURL });
  const js = nc.jetstream();

  // Publish: the JSON wire format of docs/SPEC.md §2 on journal.<table-token>.<pk-token>,
  // with the command ID as Nats-Msg-Id. The ack's seq is its journal sequence.
  async function publish(ops) {
    const cmd = { id: randomUUID(), table, pk: customer, ops };
    const h = headers();
    h.set("Content-Type", "application/json");
    const ack = await js.publish(`journal.${tableToken}.${b64url(customer)}`, JSON.stringify(cmd), { msgID: cmd.id, headers: h });
    return { id: cmd.id, seq: ack.seq };
  }

  // Wait: the outcome of command id at seq, on outcomes.<base64url(id)>.
  async function outcome({ id, seq }) {
    const c = await js.consumers.get("OUTCOMES", { filterSubjects: [`outcomes.${b64url(id)}`] });
    const msgs = await c.consume();
    for await (const m of msgs) {
      const o = m.json();
      if (o.seq === seq) {
        await msgs.close();
        return o;
      }
    }
  }

  // Read: the tip row "tip:"+rk; drop the system columns ("_v", "_cmd", …)
  // and the SDK's own (partitionKey, rowKey, etag, timestamp, odata.*).
  const orders = TableClient.fromConnectionString(tablesConn, table, { allowInsecureConnection: true });
  const strip = (e) => Object.fromEntries(Object.entries(e).filter(([k]) =>
    !k.startsWith("_") && !k.startsWith("odata.") && !["partitionKey", "rowKey", "etag", "timestamp"].includes(k)));
  async function get(rk) {
    const e = await orders.getEntity(customer, "tip:" + rk);
    return { rk, version: Number(e._v), ...strip(e) };
  }

  // Create, then read after write: the applied outcome is published once the row is written.
  const created = await outcome(await publish([{ op: "insert", rk: "order-7", entity: { status: "new", total: 12.5, "total@odata.type": "Edm.Double" } }]));
  print("create", { status: created.status, version: created.rows[0].version });
  print("read", await get("order-7"));

  // Update under ifVersion; the same guard again is rejected with a stable code.
  const ship = [{ op: "merge", rk: "order-7", ifVersion: 0, entity: { status: "shipped" } }];
  const updated = await outcome(await publish(ship));
  print("update", { status: updated.status, version: updated.rows[0].version });
  const stale = await outcome(await publish(ship));
  print("stale", { status: stale.status, code: stale.code });
  print("read", await get("order-7"));

  // The current rows of the partition: one range query over the tips.
  const list = [];
  const filter = odata`PartitionKey eq ${customer} and RowKey ge 'tip:' and RowKey lt 'tip;'`;
  for await (const e of orders.listEntities({ queryOptions: { filter } })) list.push(e.rowKey.slice(4));
  print("list", { rows: list });

  // The change feed of the partition, through a durable consumer (the checkpoint).
  const jsm = await js.jetstreamManager();
  await jsm.consumers.add("CHANGES", {
    durable_name: "node-" + b64url(customer).replace(/[^A-Za-z0-9]/g, ""),
    filter_subject: `changes.${tableToken}.${b64url(customer)}`,
    ack_policy: AckPolicy.Explicit,
    max_ack_pending: 1, // one change in flight: a row's changes stay in order through redeliveries
  });
  const feed = await js.consumers.get("CHANGES", "node-" + b64url(customer).replace(/[^A-Za-z0-9]/g, ""));
  const changes = [];
  for (let i = 0; i < 2; i++) {
    const m = await feed.next({ expires: 10000 });
    const ev = m.json();
    changes.push(`${ev.op}:${ev.rk}:v${ev.version}:${ev.after.status}`);
    await m.ackAck();
  }
  print("feed", { changes });
  await nc.close();
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
