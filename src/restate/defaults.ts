/**
 * Defaults of the Restate endpoint, in a module of their own that loads no Restate package,
 * so that the command line can print them in its help without loading the SDK.
 */

/** The port a rolebox endpoint listens on unless told otherwise. */
export const DEFAULT_ENDPOINT_PORT = 9080;
