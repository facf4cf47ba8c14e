/** What this worker thread was started with (see `WorkerBootData`). @module */
import { workerData } from "node:worker_threads";

import type { WorkerBootData } from "../protocol.js";

export const boot = workerData as WorkerBootData;
