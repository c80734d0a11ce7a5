/**
 * Placeholder: the indexer module is being built (see the open issues).
 *
 * @module
 */

export {};
