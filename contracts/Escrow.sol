// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.24;

import {Ownable} from "./Ownable.sol";

/// @notice The part of {Emission} the escrow needs: its epoch clock.
interface IEpochClock {
    function currentEpoch() external view returns (uint256);
}

/// @title Escrow
/// @notice Consumers deposit native currency; authorized settlers (an owner-managed set)
/// settle usage, moving funds from a consumer's deposit to a provider's earnings and emitting
/// `Settled(provider, epoch, amount, tokens)` with the epoch of the Emission contract's clock.
/// Providers withdraw their earnings; consumers withdraw what is left of their deposit.
contract Escrow is Ownable {
    /// @notice One settlement in a batch.
    struct Settlement {
        address consumer;
        address provider;
        uint256 amount;
        uint256 tokens;
    }

    IEpochClock public immutable emission;
    mapping(address => uint256) public depositOf;
    mapping(address => uint256) public earningsOf;
    mapping(address => bool) public isSettler;

    event Deposited(address indexed consumer, address indexed funder, uint256 amount);
    event DepositWithdrawn(address indexed consumer, uint256 amount);
    event Charged(address indexed consumer, address indexed provider, uint256 amount);
    event Settled(address indexed provider, uint256 indexed epoch, uint256 amount, uint256 tokens);
    event EarningsWithdrawn(address indexed provider, uint256 amount);
    event SettlerAdded(address indexed settler);
    event SettlerRemoved(address indexed settler);

    error NotSettler(address caller);
    error ZeroAmount();
    error InsufficientDeposit(address consumer, uint256 requested, uint256 available);
    error SettlerAlreadyAdded(address settler);
    error SettlerNotFound(address settler);
    error TransferFailed(address to, uint256 amount);

    constructor(address initialOwner, IEpochClock emission_) Ownable(initialOwner) {
        if (address(emission_) == address(0)) revert ZeroAddress();
        emission = emission_;
    }

    modifier onlySettler() {
        if (!isSettler[msg.sender]) revert NotSettler(msg.sender);
        _;
    }

    function addSettler(address settler) external onlyOwner {
        if (settler == address(0)) revert ZeroAddress();
        if (isSettler[settler]) revert SettlerAlreadyAdded(settler);
        isSettler[settler] = true;
        emit SettlerAdded(settler);
    }

    function removeSettler(address settler) external onlyOwner {
        if (!isSettler[settler]) revert SettlerNotFound(settler);
        isSettler[settler] = false;
        emit SettlerRemoved(settler);
    }

    function deposit() external payable {
        _deposit(msg.sender);
    }

    function depositFor(address consumer) external payable {
        _deposit(consumer);
    }

    function withdrawDeposit(uint256 amount) external {
        if (amount == 0) revert ZeroAmount();
        uint256 available = depositOf[msg.sender];
        if (amount > available) revert InsufficientDeposit(msg.sender, amount, available);
        depositOf[msg.sender] = available - amount;
        emit DepositWithdrawn(msg.sender, amount);
        _send(msg.sender, amount);
    }

    /// @notice Charges `consumer` `amount` for `tokens` tokens served by `provider`.
    function settle(address consumer, address provider, uint256 amount, uint256 tokens)
        external
        onlySettler
    {
        _settle(consumer, provider, amount, tokens, emission.currentEpoch());
    }

    /// @notice Settles many usages in one transaction, all in the current epoch.
    function settleBatch(Settlement[] calldata settlements) external onlySettler {
        uint256 epoch = emission.currentEpoch();
        for (uint256 i = 0; i < settlements.length; ++i) {
            Settlement calldata s = settlements[i];
            _settle(s.consumer, s.provider, s.amount, s.tokens, epoch);
        }
    }

    function withdrawEarnings() external {
        uint256 amount = earningsOf[msg.sender];
        if (amount == 0) revert ZeroAmount();
        earningsOf[msg.sender] = 0;
        emit EarningsWithdrawn(msg.sender, amount);
        _send(msg.sender, amount);
    }

    function _deposit(address consumer) private {
        if (consumer == address(0)) revert ZeroAddress();
        if (msg.value == 0) revert ZeroAmount();
        depositOf[consumer] += msg.value;
        emit Deposited(consumer, msg.sender, msg.value);
    }

    function _settle(
        address consumer,
        address provider,
        uint256 amount,
        uint256 tokens,
        uint256 epoch
    ) private {
        if (provider == address(0)) revert ZeroAddress();
        uint256 available = depositOf[consumer];
        if (amount > available) revert InsufficientDeposit(consumer, amount, available);
        depositOf[consumer] = available - amount;
        earningsOf[provider] += amount;
        emit Charged(consumer, provider, amount);
        emit Settled(provider, epoch, amount, tokens);
    }

    function _send(address to, uint256 amount) private {
        (bool ok,) = to.call{value: amount}("");
        if (!ok) revert TransferFailed(to, amount);
    }
}
