import { describe, expect, it } from "vitest";

import { Mailbox } from "./support/internals.js";
import { deferred } from "./support/gates.js";

describe("Mailbox", () => {
  it("runs jobs one at a time, in the order they were posted", async () => {
    const mailbox = new Mailbox();
    const log: string[] = [];
    const first = deferred();
    const a = mailbox.post(async () => {
      log.push("a:start");
      await first.promise;
      log.push("a:end");
      return "a";
    });
    const b = mailbox.post(() => {
      log.push("b");
      return "b";
    });
    await new Promise((resolve) => setImmediate(resolve));
    expect(log).toEqual(["a:start"]);
    expect(mailbox.size).toBe(2);
    first.resolve();
    expect(await Promise.all([a, b])).toEqual(["a", "b"]);
    expect(log).toEqual(["a:start", "a:end", "b"]);
    expect(mailbox.size).toBe(0);
  });

  it("never runs a job synchronously inside post", () => {
    const mailbox = new Mailbox();
    let hasRun = false;
    void mailbox.post(() => {
      hasRun = true;
    });
    expect(hasRun).toBe(false);
  });

  it("rejects only the job that threw and goes on with the next", async () => {
    const mailbox = new Mailbox();
    const failing = mailbox.post(() => {
      throw new Error("hook bug");
    });
    const next = mailbox.post(() => "still served");
    await expect(failing).rejects.toThrow("hook bug");
    await expect(next).resolves.toBe("still served");
  });
});
