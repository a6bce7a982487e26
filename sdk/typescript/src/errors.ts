/** An error answer of the server: HTTP status, the API's error code and message. */
export class APIError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    readonly apiMessage: string,
  ) {
    super(`mio: ${status} ${code}: ${apiMessage}`);
    this.name = "APIError";
  }
}

/** 404: no such consumer, message, account or outbound message. */
export class NotFound extends APIError {
  override name = "NotFound";
}

/** 409 lease_lost: the delivery is no longer leased to this consumer; nothing was written. */
export class LeaseLost extends APIError {
  override name = "LeaseLost";
}

/** 409 conflict (an idempotency key used for a different command, ...). */
export class Conflict extends APIError {
  override name = "Conflict";
}

/** 412: Consumer.create found a consumer by that name; it was left as it is. */
export class ConsumerExists extends APIError {
  override name = "ConsumerExists";
}

/** Throw from a consume handler to terminate the delivery (dead-letter it, never redelivered). */
export class Term extends Error {
  constructor(readonly reason = "terminated by handler") {
    super(reason);
    this.name = "Term";
  }
}

export function apiError(status: number, code: string, message: string): APIError {
  if (status === 404) return new NotFound(status, code, message);
  if (status === 409 && code === "lease_lost") return new LeaseLost(status, code, message);
  if (status === 409) return new Conflict(status, code, message);
  if (status === 412) return new ConsumerExists(status, code, message);
  return new APIError(status, code, message);
}
