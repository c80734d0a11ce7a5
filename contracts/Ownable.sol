// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.24;

/// @title Ownable
/// @notice Single-owner access control with a two-step transfer: the owner names a pending
/// owner, who must accept. A mistyped address can therefore never take over a contract.
abstract contract Ownable {
    /// @notice The account allowed to call the admin functions.
    address public owner;
    /// @notice The account named by the owner that may accept ownership, or zero.
    address public pendingOwner;

    event OwnershipTransferStarted(address indexed previousOwner, address indexed newOwner);
    event OwnershipTransferred(address indexed previousOwner, address indexed newOwner);

    error NotOwner(address caller);
    error NotPendingOwner(address caller);
    error ZeroAddress();

    constructor(address initialOwner) {
        if (initialOwner == address(0)) revert ZeroAddress();
        owner = initialOwner;
        emit OwnershipTransferred(address(0), initialOwner);
    }

    modifier onlyOwner() {
        if (msg.sender != owner) revert NotOwner(msg.sender);
        _;
    }

    /// @notice Names `newOwner` as the pending owner; zero cancels a pending transfer.
    function transferOwnership(address newOwner) external onlyOwner {
        pendingOwner = newOwner;
        emit OwnershipTransferStarted(owner, newOwner);
    }

    /// @notice Completes a transfer; only the pending owner may call it.
    function acceptOwnership() external {
        if (msg.sender != pendingOwner || msg.sender == address(0)) {
            revert NotPendingOwner(msg.sender);
        }
        address previous = owner;
        owner = msg.sender;
        pendingOwner = address(0);
        emit OwnershipTransferred(previous, msg.sender);
    }
}
