/** The Piscina host's record of each thread Piscina said ready (`workerCreate`). @module */
import { MessageChannel, type MessagePort, type Worker } from "node:worker_threads";

export interface ThreadRecord<Instance> {
  readonly threadId: number;
  readonly instance: Instance;
  /** Its `Worker`, as Piscina lists it; undefined if it was gone before it could be looked up. */
  readonly worker: Worker | undefined;
  /** A task's queue options naming this thread: what the balancer places the task by. */
  readonly target: { readonly threadId: number };
  readonly port: MessagePort;
  /** The thread's end, until it goes out with the first task the thread runs. */
  portForThread: MessagePort | undefined;
  /** Its boot message or a reply arrived. */
  isBooted: boolean;
  isGone: boolean;
  /** Set while the host terminates it. */
  exitWatch: unknown;
}

export class ThreadRecords<Instance> {
  readonly #records = new Map<number, ThreadRecord<Instance>>();

  add(threadId: number, instance: Instance, worker: Worker | undefined): ThreadRecord<Instance> {
    const { port1, port2 } = new MessageChannel();
    // Neither may keep the process alive: a thread's life is Piscina's to decide.
    port1.unref();
    const record: ThreadRecord<Instance> = {
      threadId,
      instance,
      worker,
      target: Object.freeze({ threadId }),
      port: port1,
      portForThread: port2,
      isBooted: false,
      isGone: false,
      exitWatch: undefined,
    };
    this.#records.set(threadId, record);
    return record;
  }

  get(threadId: number): ThreadRecord<Instance> | undefined {
    return this.#records.get(threadId);
  }

  *readyIn(instance: Instance): Generator<ThreadRecord<Instance>> {
    for (const record of this.#records.values()) if (record.instance === instance) yield record;
  }

  endExitWatch(record: ThreadRecord<Instance>): unknown {
    const timer = record.exitWatch;
    record.exitWatch = undefined;
    return timer;
  }

  endExitWatches(): unknown[] {
    const timers: unknown[] = [];
    for (const record of this.#records.values()) if (record.exitWatch !== undefined) timers.push(this.endExitWatch(record));
    return timers;
  }

  delete(threadId: number): void {
    const record = this.#records.get(threadId);
    if (record === undefined) return;
    this.endExitWatch(record);
    record.port.close();
    record.portForThread?.close();
    this.#records.delete(threadId);
  }
}
