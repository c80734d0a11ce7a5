// The Escrow's Settled event (contracts/Escrow.sol), as chain/abi.ts declares it.
export const escrowSettledAbi = [
  {
    type: "event",
    name: "Settled",
    inputs: [
      { name: "provider", type: "address", indexed: true },
      { name: "epoch", type: "uint256", indexed: true },
      { name: "amount", type: "uint256", indexed: false },
      { name: "tokens", type: "uint256", indexed: false },
    ],
    anonymous: false,
  },
] as const;
