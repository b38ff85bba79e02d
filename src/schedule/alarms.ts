/**
 * The alarm clock the schedule domain needs, without naming BullMQ (src/queue implements it with
 * delayed jobs; only src/queue and workers/ import bullmq).
 */
export interface FiringAlarms {
  /**
   * Arms the alarm for one occurrence of an item. Idempotent: arming the same (item, time) twice
   * leaves one alarm; an alarm that already went off for it (while the item was paused) is
   * replaced, so a resumed item fires.
   */
  arm(itemId: string, at: number): Promise<void>;
  /** Best effort: an alarm that goes off anyway finds the item changed and does nothing. */
  disarm(itemId: string, at: number): Promise<void>;
}

/** The payload of one alarm: which item, and the occurrence it was set for. */
export interface Occurrence {
  itemId: string;
  scheduledFor: number;
}
