/**
 * Placeholder: the daemon module is being built (see the open issues).
 *
 * @module
 */

export {};
