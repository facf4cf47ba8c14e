import type { Redis } from "ioredis";

import type { PiVersion } from "../options.js";
import type { FleetKeys, NodeRecord } from "./fleet-protocol.js";

/** What other nodes serve under a tool's name: their toolset, and their pi when they name one. */
interface OtherToolset {
  readonly toolsetHash: string;
  readonly pi: PiVersion | undefined;
}

/**
 * A coordinator's view of the fleet's node registry: which live nodes serve
 * its toolset (and with how many threads), and which tools other nodes serve
 * (to tell a tool mismatch from an empty fleet). Nodes renew their entries;
 * an entry that expired is a node gone, and is dropped from the set.
 */
export class NodeDirectory {
  readonly #keys: FleetKeys;
  readonly #toolsetHash: string;
  #nodes = 0;
  #threads = 0;
  #noNodeSince: number | undefined;
  #otherTools = new Map<string, OtherToolset>();

  readonly #now: () => number;

  /** @param now The coordinator's clock. */
  constructor(keys: FleetKeys, toolsetHash: string, now: () => number) {
    this.#keys = keys;
    this.#toolsetHash = toolsetHash;
    this.#now = now;
  }

  /** Live nodes serving the toolset, at the last look. */
  get nodes(): number {
    return this.#nodes;
  }

  /** Their threads, added up. */
  get threads(): number {
    return this.#threads;
  }

  /** Milliseconds since the last look found no node for the toolset; 0 while one serves it. */
  get unservedForMs(): number {
    return this.#noNodeSince === undefined ? 0 : this.#now() - this.#noNodeSince;
  }

  /** The toolset (and pi) of other nodes serving a tool of this name, if any. */
  otherToolsetOf(toolName: string): OtherToolset | undefined {
    return this.#otherTools.get(toolName);
  }

  /** Reads the registry (two round trips). */
  async refresh(commands: Redis): Promise<void> {
    const ids = await commands.smembers(this.#keys.nodes);
    const records = ids.length === 0 ? [] : await commands.mget(ids.map((id) => this.#keys.node(id)));
    let nodes = 0;
    let threads = 0;
    const otherTools = new Map<string, OtherToolset>();
    const gone: string[] = [];
    records.forEach((text, index) => {
      if (text === null) {
        gone.push(ids[index]!);
        return;
      }
      const record = JSON.parse(text) as NodeRecord;
      if (record.toolsetHash === this.#toolsetHash) {
        nodes += 1;
        threads += record.threads;
      } else for (const tool of record.tools) otherTools.set(tool, { toolsetHash: record.toolsetHash, pi: record.pi });
    });
    if (gone.length > 0) commands.srem(this.#keys.nodes, ...gone).catch(() => {});
    this.#nodes = nodes;
    this.#threads = threads;
    this.#otherTools = otherTools;
    if (nodes > 0) this.#noNodeSince = undefined;
    else this.#noNodeSince ??= this.#now();
  }
}
