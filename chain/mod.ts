/**
 * Placeholder: the chain module is being built (see the open issues).
 *
 * @module
 */

export {};
