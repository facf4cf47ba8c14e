import type { Redis } from "ioredis";

import type { PiVersion } from "../options.js";
import type { FleetKeys, NodeRecord } from "./fleet-protocol.js";

interface OtherToolset {
  readonly toolsetHash: string;
  readonly pi: PiVersion | undefined;
}

/**
 * A coordinator's view of the node registry: live nodes (and threads) serving its toolset, and the tools other nodes
 * serve (to tell a mismatch from an empty fleet). An expired entry is a node gone, and is dropped from the set.
 */
export class NodeDirectory {
  readonly #keys: FleetKeys;
  readonly #toolsetHash: string;
  #nodes = 0;
  #threads = 0;
  #noNodeSince: number | undefined;
  #otherTools = new Map<string, OtherToolset>();

  readonly #now: () => number;

  constructor(keys: FleetKeys, toolsetHash: string, now: () => number) {
    this.#keys = keys;
    this.#toolsetHash = toolsetHash;
    this.#now = now;
  }

  get nodes(): number {
    return this.#nodes;
  }

  get threads(): number {
    return this.#threads;
  }

  /** 0 while a node serves the toolset. */
  get unservedForMs(): number {
    return this.#noNodeSince === undefined ? 0 : this.#now() - this.#noNodeSince;
  }

  otherToolsetOf(toolName: string): OtherToolset | undefined {
    return this.#otherTools.get(toolName);
  }

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
